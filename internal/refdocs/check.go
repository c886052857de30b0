package refdocs

import (
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagName is a long flag as a page writes it.
var flagName = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// CLIMismatches compares a command-line page with the command tree it
// should describe, independently of how CLI wrote it: every command
// cobra documents (not hidden, not help) has its section, holding each of
// its visible flags, local or inherited; and every section, and every
// --flag anywhere on the page, belongs to the tree. root must be
// complete as at run time (cobra adds completion on Execute).
func CLIMismatches(root *cobra.Command, page string) []string {
	sections := map[string]string{}
	var cur string
	for line := range strings.Lines(page) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cur = strings.TrimSpace(h)
			sections[cur] = ""
			continue
		}
		if cur != "" {
			sections[cur] += line
		}
	}
	var bad []string
	commands := map[string]bool{}
	allFlags := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		path := c.CommandPath()
		commands[path] = true
		body, ok := sections[path]
		if !ok {
			bad = append(bad, "command "+path+" has no section")
		}
		visible := func(f *pflag.Flag) {
			allFlags["--"+f.Name] = true
			if ok && !f.Hidden && !strings.Contains(body, "--"+f.Name+" ") && !strings.Contains(body, "--"+f.Name+"\n") {
				bad = append(bad, "flag --"+f.Name+" of "+path+" is not in its section")
			}
		}
		c.LocalFlags().VisitAll(visible)
		c.InheritedFlags().VisitAll(visible)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	for s := range sections {
		if !commands[s] {
			bad = append(bad, "section "+s+" is no command")
		}
	}
	for _, f := range flagName.FindAllString(page, -1) {
		if !allFlags[f] {
			bad = append(bad, "flag "+f+" is on the page but no command has it")
			allFlags[f] = true // once
		}
	}
	return bad
}
