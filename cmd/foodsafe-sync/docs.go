package main

import (
	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes this
// binary's command-line reference page into DIR (foodsafe's own `docs
// gen` writes the others).
func docsCmd() *cobra.Command {
	return refdocs.Command("Write the command-line reference page into DIR", cmdline.ExactArgs(1), nil)
}
