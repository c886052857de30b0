package main

import (
	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes this
// binary's command-line reference page into DIR (foodsafe's own `docs
// gen` writes the others).
func docsCmd() *cobra.Command {
	docs := &cobra.Command{Use: "docs", Short: "Reference documentation", Hidden: true}
	docs.AddCommand(&cobra.Command{
		Use:   "gen DIR",
		Short: "Write the command-line reference page into DIR",
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			page, err := refdocs.CLI(root)
			if err != nil {
				return err
			}
			return refdocs.Write(args[0], map[string][]byte{refdocs.CLIPage(root.Name()): page})
		},
	})
	return docs
}
