package clidoc

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// optionLine is a flag as cobra lists a command's options:
// "  -n, --name string   usage".
var optionLine = regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?(--[a-z][a-z0-9-]*)`)

// CLIMismatches compares a command-line page with the command tree it
// should describe, independently of how CLI wrote it: every command
// cobra documents (not hidden, not help) has its section, holding each of
// its visible flags, local or inherited; and every section, and every
// flag a section lists as an option, belongs to the tree. root must be
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
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		path := c.CommandPath()
		commands[path] = true
		body, ok := sections[path]
		if !ok {
			bad = append(bad, "command "+path+" has no section")
		}
		flags := map[string]bool{}
		visible := func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			flags["--"+f.Name] = true
			if ok && !strings.Contains(body, "--"+f.Name+" ") && !strings.Contains(body, "--"+f.Name+"\n") {
				bad = append(bad, "flag --"+f.Name+" of "+path+" is not in its section")
			}
		}
		c.LocalFlags().VisitAll(visible)
		c.InheritedFlags().VisitAll(visible)
		for _, m := range optionLine.FindAllStringSubmatch(body, -1) {
			if !flags[m[1]] {
				bad = append(bad, "section "+path+" lists "+m[1]+", which the command does not have")
			}
		}
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
	return bad
}

// DocsGenMismatches runs `docs gen` of root, a binary's command tree as
// its main builds it, into a temporary directory, and checks what it
// wrote: each of pages is there, the binary's command-line page describes
// root as CLIMismatches requires, and none of hidden (commands and flags
// the binary hides) appears on that page.
func DocsGenMismatches(ctx context.Context, root *cobra.Command, pages []string, hidden ...string) []string {
	dir, err := os.MkdirTemp("", "docs-gen-")
	if err != nil {
		return []string{err.Error()}
	}
	defer os.RemoveAll(dir)
	root.SetArgs([]string{"docs", "gen", dir})
	if err := root.ExecuteContext(ctx); err != nil {
		return []string{"docs gen: " + err.Error()}
	}
	var bad []string
	for _, p := range pages {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			bad = append(bad, err.Error())
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, CLIPage(root.Name())))
	if err != nil {
		return append(bad, err.Error())
	}
	bad = append(bad, CLIMismatches(root, string(page))...)
	for _, h := range hidden {
		if strings.Contains(string(page), h) {
			bad = append(bad, h+" is documented")
		}
	}
	return bad
}
