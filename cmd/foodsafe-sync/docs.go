package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/foodsafe/foodsafe/internal/cmdline"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/refdocs/clidoc"
)

// docsCmd is the hidden `docs gen DIR` behind `make docs`: it writes this
// binary's command-line reference page and the page of the mirror's typed
// relations into DIR (foodsafe's own `docs gen` writes the others).
func docsCmd() *cobra.Command {
	return clidoc.Command("Write the command-line and typed-relations reference pages into DIR", cmdline.ExactArgs(1),
		func(context.Context) (map[string][]byte, error) {
			return map[string][]byte{typed.Page: typed.Doc()}, nil
		})
}
