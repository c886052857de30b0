package main

import (
	"context"
	"io"
	"testing"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/refdocs/clidoc"
)

// The command-line page documents every command and flag of the tree,
// and nothing else (the refused key flags are hidden).
func TestDocsGenListsEveryCommandAndFlag(t *testing.T) {
	root := newRoot(func(string) string { return "" }, io.Discard, io.Discard)
	for _, m := range clidoc.DocsGenMismatches(context.Background(), root, []string{typed.Page}, "--api-key", "--token", "docs gen") {
		t.Error(m)
	}
}
