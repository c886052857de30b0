package main

import (
	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes this
// binary's command-line reference page into DIR (foodsafe's own `docs
// gen` writes the others).
func docsCmd() *cobra.Command {
	return refdocs.Command("Write the command-line reference page into DIR", func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(1)(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}, nil)
}
