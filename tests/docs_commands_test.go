package tests

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The MCP Inspector commands of the partner guide name the release they
// were checked with: unpinned, npx on a Node older than the current
// release needs picks an old release silently, which refuses the very
// arguments the guide passes. The guide says which Node the pinned
// release needs.
func TestPartnerGuidePinsTheInspector(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/partners.md")
	require.NoError(t, err)
	guide := string(b)
	uses := regexp.MustCompile(`npx[^\n]*@modelcontextprotocol/inspector(@[^\s]*)?`).FindAllStringSubmatch(guide, -1)
	require.NotEmpty(t, uses, "the guide shows the Inspector")
	pinned := regexp.MustCompile(`^@[0-9]+\.[0-9]+\.[0-9]+$`)
	for _, u := range uses {
		require.Regexp(t, pinned, u[1], "an exact release in %q", u[0])
	}
	require.Regexp(t, `Node 22\.19 or later`, guide, "the Node version the pinned release needs")
}

// The analyst guide says how to get the DuckDB its recipes run on (the
// shell, or the Node package the tests use) and which version they were
// checked with: the engine of the package .ci/duckdb pins.
func TestAnalystGuideSaysWhichDuckDB(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/partners-sync.md")
	require.NoError(t, err)
	guide := string(b)
	pkg, err := os.ReadFile("../.ci/duckdb/package.json")
	require.NoError(t, err)
	var manifest struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	require.NoError(t, json.Unmarshal(pkg, &manifest))
	pinned := manifest.DevDependencies["@duckdb/node-api"]
	require.NotEmpty(t, pinned)
	engine, _, _ := strings.Cut(pinned, "-")
	require.Contains(t, guide, "`@duckdb/node-api` "+pinned, "the package the tests use")
	require.Contains(t, guide, "checked\nwith DuckDB "+engine, "the engine version the recipes were checked with")
	require.Contains(t, guide, "duckdb.org", "where the shell comes from")
	require.Contains(t, guide, "npm ci --prefix .ci/duckdb\nnode .ci/duckdb/read.mjs query .data")
}
