package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// A JSON-RPC batch is refused at every protocol revision, before any of
// its calls runs: one POST is one message, one budget unit, one audit row.
func TestMCPRefusesBatches(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a := f.a
	key := a.newKey(grant(restA, readScopes...))
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"walk_records","arguments":{"restaurantId":"` + restA + `","collection":"areas"}}}`
	var calls []string
	for i := range 50 {
		calls = append(calls, fmt.Sprintf(call, i))
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	revisions := []string{"", "2024-11-05", "2025-03-26", "2025-06-18", rev2026}
	for _, rev := range revisions {
		for _, body := range []string{batch, " \r\n\t" + batch, "[]"} {
			h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
				"Accept": "application/json, text/event-stream"}
			if rev != "" {
				h["MCP-Protocol-Version"] = rev
			}
			r := a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
			p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
			require.Contains(t, p.Detail, "JSON-RPC batches", "revision %q", rev)
			require.NotContains(t, string(r.Body), "areas")
		}
	}
	var refused int
	for _, e := range flushedAudit(t, a) {
		if e.Route == "/mcp" && e.KeyPublicID == publicID(t, key) {
			require.Equal(t, "batch refused", e.Outcome)
			require.Equal(t, http.StatusBadRequest, e.Status)
			refused++
		}
	}
	require.Equal(t, 3*len(revisions), refused, "one audit row per POST")
	require.NotContains(t, a.logs.String(), `"status":500`)
}
