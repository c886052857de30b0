package main

import (
	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/refdocs"
	"github.com/foodsafe/foodsafe/internal/refdocs/clidoc"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes every
// reference page but foodsafe-sync's command line into DIR.
func docsCmd() *cobra.Command {
	return clidoc.Command("Write the reference pages (docs/reference) into DIR", cmdline.ExactArgs(1), refdocs.Pages)
}
