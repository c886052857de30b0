package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// docs gen writes every reference page, and the command-line page
// documents every command and flag of the tree, and nothing else.
func TestDocsGenListsEveryCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"docs", "gen", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	pages := []string{refdocs.IndexPage, refdocs.ConfigurationPage, refdocs.ProblemTypesPage, refdocs.MetricsPage, refdocs.MCPToolsPage}
	for _, m := range refdocs.DocsGenMismatches(dir, newRoot(io.Discard, io.Discard), pages, "docs gen") {
		t.Error(m)
	}
}
