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

// The command-line page documents every command and flag of the tree,
// and nothing else (the refused key flags are hidden).
func TestDocsGenListsEveryCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"docs", "gen", dir}, func(string) string { return "" }, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, refdocs.CLIPage("foodsafe-sync")))
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(func(string) string { return "" }, io.Discard, io.Discard)
	root.InitDefaultCompletionCmd()
	for _, m := range refdocs.CLIMismatches(root, string(page)) {
		t.Error(m)
	}
	for _, hidden := range []string{"--api-key", "--token", "docs gen"} {
		if bytes.Contains(page, []byte(hidden)) {
			t.Errorf("%s is documented", hidden)
		}
	}
}
