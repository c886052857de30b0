package clidoc

import (
	"bytes"
	"context"
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
	b.WriteString(Generated)
	fmt.Fprintf(&b, "# %s command line\n\n", root.Name())
	var rows [][]string
	for _, c := range cmds {
		rows = append(rows, []string{"[" + c.CommandPath() + "](" + section(c.CommandPath()) + ")", c.Short})
	}
	Table(&b, []string{"command", "what it does"}, rows)
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

// Command is a binary's hidden `docs gen DIR` (make docs): it writes into
// DIR the pages pages returns (nil for none) and the command-line page of
// the binary's own tree. It is built in each binary because the tree it
// documents is built there; cobra's generator leaves hidden commands out.
// args checks the argument the way the binary checks all of its own.
func Command(short string, args cobra.PositionalArgs, pages func(context.Context) (map[string][]byte, error)) *cobra.Command {
	docs := &cobra.Command{Use: "docs", Short: "Reference documentation", Hidden: true}
	docs.AddCommand(&cobra.Command{
		Use:   "gen DIR",
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, argv []string) error {
			out := map[string][]byte{}
			if pages != nil {
				var err error
				if out, err = pages(cmd.Context()); err != nil {
					return err
				}
			}
			root := cmd.Root()
			page, err := CLI(root)
			if err != nil {
				return err
			}
			out[CLIPage(root.Name())] = page
			return Write(argv[0], out)
		},
	})
	return docs
}
