package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
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
	for _, p := range []string{refdocs.IndexPage, refdocs.ConfigurationPage, refdocs.ProblemTypesPage, refdocs.MetricsPage,
		refdocs.MCPToolsPage, refdocs.CLIPage("foodsafe")} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Error(err)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, refdocs.CLIPage("foodsafe")))
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(io.Discard, io.Discard)
	root.InitDefaultCompletionCmd()
	for _, m := range refdocs.CLIMismatches(root, string(page)) {
		t.Error(m)
	}
	if bytes.Contains(page, []byte("docs gen")) {
		t.Error("the hidden docs command is documented")
	}
}
