package main

import (
	"context"
	"io"
	"testing"

	"github.com/foodsafe/foodsafe/internal/refdocs"
	"github.com/foodsafe/foodsafe/internal/refdocs/clidoc"
)

// docs gen writes every reference page, and the command-line page
// documents every command and flag of the tree, and nothing else.
func TestDocsGenListsEveryCommandAndFlag(t *testing.T) {
	pages := []string{refdocs.IndexPage, refdocs.ConfigurationPage, refdocs.ProblemTypesPage, refdocs.MetricsPage, refdocs.MCPToolsPage}
	for _, m := range clidoc.DocsGenMismatches(context.Background(), newRoot(io.Discard, io.Discard), pages, "docs gen") {
		t.Error(m)
	}
}
