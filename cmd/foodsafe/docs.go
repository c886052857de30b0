package main

import (
	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes the
// reference pages into DIR. It lives in the binary because the command
// tree the CLI page documents is built here; cobra's generator leaves
// hidden commands out of it.
func docsCmd() *cobra.Command {
	docs := &cobra.Command{Use: "docs", Short: "Reference documentation", Hidden: true}
	docs.AddCommand(&cobra.Command{
		Use:   "gen DIR",
		Short: "Write the reference pages (docs/reference) into DIR",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pages, err := refdocs.Pages(cmd.Context())
			if err != nil {
				return err
			}
			root := cmd.Root()
			if pages[refdocs.CLIPage(root.Name())], err = refdocs.CLI(root); err != nil {
				return err
			}
			return refdocs.Write(args[0], pages)
		},
	})
	return docs
}
