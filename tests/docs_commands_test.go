package tests

import (
	"os"
	"regexp"
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
