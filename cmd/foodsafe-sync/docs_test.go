package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/foodsafe/foodsafe/internal/refdocs"
)

// The command-line page documents every command and flag of the tree,
// and nothing else (the refused key flags are hidden).
func TestDocsGenListsEveryCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	noEnv := func(string) string { return "" }
	if code := run(context.Background(), []string{"docs", "gen", dir}, noEnv, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, m := range refdocs.DocsGenMismatches(dir, newRoot(noEnv, io.Discard, io.Discard), nil, "--api-key", "--token", "docs gen") {
		t.Error(m)
	}
}
