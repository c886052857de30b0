package refdocs

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// CLI renders the command-line page of a binary from its command tree,
// one section per command by cobra's own Markdown generator, in one page
// (cobra's links between command files become links between sections).
// What cobra leaves out of its documentation (hidden commands such as
// `docs gen`, help) is left out here too.
func CLI(root *cobra.Command) ([]byte, error) {
	var cmds []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	var b bytes.Buffer
	b.WriteString(generated)
	fmt.Fprintf(&b, "# %s command line\n\n", root.Name())
	var rows [][]string
	for _, c := range cmds {
		rows = append(rows, []string{"[" + c.CommandPath() + "](" + section(c.CommandPath()) + ")", c.Short})
	}
	table(&b, []string{"command", "what it does"}, rows)
	for _, c := range cmds {
		b.WriteString("\n")
		// The generation date would make every run differ.
		c.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(c, &b, func(file string) string {
			return section(strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", " "))
		}); err != nil {
			return nil, err
		}
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// section is the anchor of a command's section: its heading is the
// command path, and GitHub's anchor of "foodsafe keys create" is
// "foodsafe-keys-create".
func section(path string) string {
	return "#" + strings.ReplaceAll(path, " ", "-")
}
