package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
)

func auditEvents(t testing.TB, a *app) []audit.Event {
	t.Helper()
	ev, err := a.store().AuditRecent(context.Background(), store.AuditFilter{Since: time.Now().Add(-time.Hour), Limit: 1000})
	require.NoError(t, err)
	return ev
}

// flushedAudit shuts the app down (flushing its audit writer) and reads
// the trail through a fresh store, the app's pool being closed.
func flushedAudit(t testing.TB, a *app) []audit.Event {
	t.Helper()
	require.NoError(t, a.svc.Close(context.Background()))
	st, err := store.Open(context.Background(), a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer st.Close()
	events, err := st.AuditRecent(context.Background(), store.AuditFilter{Since: time.Now().Add(-time.Hour), Limit: 100})
	require.NoError(t, err)
	return events
}

func findEvent(events []audit.Event, requestID string) (audit.Event, bool) {
	for _, e := range events {
		if e.RequestID == requestID {
			return e, true
		}
	}
	return audit.Event{}, false
}

// flushedCounts shuts the app down (flushing its audit writer) and reads
// the requests it counted by shape, through a fresh store.
func flushedCounts(t testing.TB, a *app) []audit.ShapeCount {
	t.Helper()
	require.NoError(t, a.svc.Close(context.Background()))
	st, err := store.Open(context.Background(), a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer st.Close()
	counts, err := st.AuditCountsRecent(context.Background(), time.Now().Add(-time.Hour), "", 1000)
	require.NoError(t, err)
	return counts
}

// findCount is the count of the shape of route, status and outcome.
func findCount(counts []audit.ShapeCount, route string, status int, outcome string) (audit.ShapeCount, bool) {
	for _, c := range counts {
		if c.Route == route && c.Status == status && c.Outcome == outcome {
			return c, true
		}
	}
	return audit.ShapeCount{}, false
}

// The audit writer holds events and counts (flush interval of an hour
// here) and writes them all when the service shuts down: an authenticated
// request as one row, requests that reached no key's data counted by
// shape, successful health probes not at all.
func TestAuditRecordsAndFlushesOnShutdown(t *testing.T) {
	t.Parallel()
	// One minute for every request, whenever the test runs.
	at := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute + 30*time.Second)
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }), withClock(func() time.Time { return at }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	gone := at.Add(-time.Hour)
	expired := a.newKeyExpiring(&gone, grant("r1", "deliveries:read"))

	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants", "X-Request-ID", "audit-ok").Status)
	for range 2 {
		require.Equal(t, http.StatusUnauthorized, a.getAs("fsk_aaaaaaaaaaaaaaaa."+secretOf(key), "/v1/restaurants", "X-Request-ID", "audit-unknown").Status)
	}
	require.Equal(t, http.StatusUnauthorized, a.getAs(expired, "/v1/restaurants").Status)
	require.Equal(t, http.StatusUnauthorized, a.get("/v1/restaurants", "X-Request-ID", "audit-missing").Status)
	require.Equal(t, http.StatusNotFound, a.get("/nowhere", "X-Request-ID", "audit-404").Status)
	require.Equal(t, http.StatusNotFound, a.do(req{Method: "BREW", Path: "/nowhere"}).Status)
	require.Equal(t, http.StatusUnauthorized, a.get("/v1/restaurants/r1/deliveries?from=0&to=1", "X-Request-ID", "audit-template").Status)
	require.Equal(t, http.StatusOK, a.get("/v1/openapi.json").Status)
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusOK, a.get("/health/ready", "X-Request-ID", "audit-health").Status)
		require.Equal(t, http.StatusOK, a.get("/health/live", "X-Request-ID", "audit-health").Status)
	}
	require.Empty(t, auditEvents(t, a), "nothing is written before the flush")

	events := flushedAudit(t, a)
	ok, found := findEvent(events, "audit-ok")
	require.True(t, found)
	require.Equal(t, publicID(t, key), ok.KeyPublicID)
	require.Equal(t, "GET", ok.Method)
	require.Equal(t, "/v1/restaurants", ok.Route)
	require.Equal(t, 200, ok.Status)
	require.Equal(t, "127.0.0.1", ok.ClientIP.String())
	require.Empty(t, ok.Outcome)
	require.True(t, at.Equal(ok.At))
	require.Len(t, events, 1, "only the authenticated request has a row of its own")

	counts := flushedCounts(t, a)
	want := []struct {
		route, outcome, key, method string
		status                      int
		requests                    int64
	}{
		{"/v1/restaurants", "unknown", "", "GET", 401, 2},
		{"/v1/restaurants", "expired", publicID(t, expired), "GET", 401, 1},
		{"/v1/restaurants", "missing", "", "GET", 401, 1},
		{"(unmatched)", "", "", "GET", 404, 1},
		{"(unmatched)", "", "", "other", 404, 1},
		{"/v1/restaurants/{restaurantId}/deliveries", "missing", "", "GET", 401, 1},
		{"/v1/openapi.json", "", "", "GET", 200, 1},
	}
	require.Len(t, counts, len(want), "%+v", counts)
	for _, w := range want {
		var got *audit.ShapeCount
		for i, c := range counts {
			if c.Route == w.route && c.Outcome == w.outcome && c.Method == w.method && c.Status == w.status {
				got = &counts[i]
			}
		}
		require.NotNil(t, got, "%+v in %+v", w, counts)
		require.Equal(t, w.requests, got.Requests, "%+v", w)
		require.Equal(t, w.key, got.KeyPublicID, "%+v: only an existing key is named", w)
		require.Equal(t, "127.0.0.1/32", got.Client.String())
		require.True(t, at.Truncate(time.Minute).Equal(got.Minute), "the minute: %s", got.Minute)
	}
}

func TestAuditFlushesOnInterval(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = 50 * time.Millisecond }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	a.getAs(key, "/v1/restaurants", "X-Request-ID", "interval-1")
	a.get("/nowhere")
	require.Eventually(t, func() bool {
		_, ok := findEvent(auditEvents(t, a), "interval-1")
		counts, err := a.store().AuditCountsRecent(context.Background(), time.Now().Add(-time.Hour), "", 10)
		require.NoError(t, err)
		_, counted := findCount(counts, "(unmatched)", 404, "")
		return ok && counted
	}, 10*time.Second, 25*time.Millisecond)
}

// Hostile path bytes (invalid UTF-8, NUL, over-long ids) must not poison
// the audit batch they land in.
func TestAuditSurvivesHostilePaths(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants", "X-Request-ID", "before").Status)
	for i, p := range []string{"%FF%FE", "a%00b", strings.Repeat("%C3%A9", 150)} {
		r := a.getAs(key, "/v1/restaurants/"+p+"/deliveries?from=0&to=1", "X-Request-ID", fmt.Sprintf("hostile-%d", i))
		requireProblem(t, r, http.StatusNotFound, "not-found")
	}
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants", "X-Request-ID", "after").Status)
	events := flushedAudit(t, a)
	for _, id := range []string{"before", "after", "hostile-0", "hostile-1", "hostile-2"} {
		e, found := findEvent(events, id)
		require.True(t, found, "%s recorded", id)
		require.True(t, utf8.ValidString(e.RestaurantID))
		require.NotContains(t, e.RestaurantID, "\x00")
		require.LessOrEqual(t, utf8.RuneCountInString(e.RestaurantID), 200)
	}
}

// A key pasted where it does not belong (a path, X-Request-ID, a body
// field) never reaches a log line, an audit row or a problem body: its
// secret half is redacted, its public id kept for support.
func TestPastedKeysAreRedacted(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "deliveries:read"))
	secret := secretOf(key)
	var bodies []string
	r := a.getAs(key, "/v1/restaurants/"+key+"/deliveries?from=0&to=1")
	requireProblem(t, r, http.StatusNotFound, "not-found")
	bodies = append(bodies, string(r.Body))
	r = a.get("/nowhere/"+key, "X-Request-ID", key)
	requireProblem(t, r, http.StatusNotFound, "not-found")
	require.NotEqual(t, key, r.Header.Get("X-Request-ID"), "a credential is never echoed as a request id")
	bodies = append(bodies, string(r.Body))
	// Its dot escaped: the path is decoded before it is looked at.
	r = a.get("/nowhere/" + strings.Replace(key, ".", "%2E", 1))
	requireProblem(t, r, http.StatusNotFound, "not-found")
	bodies = append(bodies, string(r.Body))
	r = a.ingest(key, "r1", "areas", "a1", "m1", snapshot("r1", "a1", "m1", 1, false, map[string]any{"name": "x", "isDeleted": false, "note": key}))
	requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	bodies = append(bodies, string(r.Body))
	sess := a.openSession(key, map[string]any{"scopes": []string{key}})
	requireProblem(t, sess, http.StatusBadRequest, "invalid-request")
	bodies = append(bodies, string(sess.Body))
	for _, b := range bodies {
		require.NotContains(t, b, secret)
	}
	require.Contains(t, strings.Join(bodies, ""), "[redacted]", "the public half stays quotable")

	events := flushedAudit(t, a)
	require.NotEmpty(t, events)
	for _, e := range events {
		require.NotContains(t, fmt.Sprintf("%+v", e), secret)
	}
	logs := a.logs.String()
	require.Contains(t, logs, "/nowhere/fsk_")
	require.NotContains(t, logs, secret)
}

// A key sent as an MCP tool name or as a JSON-RPC method never reaches an
// audit row (every field passes through the redactor), and every MCP
// request refused before a method ran has a row that says why.
func TestAuditOfMCPRequests(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read"))
	secret := secretOf(key)
	post := func(id, contentType, accept, body string) response {
		h := map[string]string{"Authorization": "Bearer " + key, "X-Request-ID": id}
		if contentType != "" {
			h["Content-Type"] = contentType
		}
		if accept != "" {
			h["Accept"] = accept
		}
		return a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
	}
	const both = "application/json, text/event-stream"
	post("tool-is-key", "application/json", both,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+key+`","arguments":{}}}`)
	post("method-is-key", "application/json", both, `{"jsonrpc":"2.0","id":2,"method":"`+key+`","params":{}}`)
	refused := map[string]int{
		"refused-type":   post("refused-type", "text/plain", both, `{}`).Status,
		"refused-accept": post("refused-accept", "application/json", "text/html", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`).Status,
		"refused-json":   post("refused-json", "application/json", both, `{"jsonrpc":`).Status,
		"refused-batch":  post("refused-batch", "application/json", both, `[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`).Status,
		// Protocol 2026-07-28 without its headers: a JSON-RPC error.
		"refused-headers": a.do(req{Method: http.MethodPost, Path: "/mcp", Header: map[string]string{"Authorization": "Bearer " + key,
			"X-Request-ID": "refused-headers", "MCP-Protocol-Version": rev2026, "Content-Type": "application/json", "Accept": both},
			Body: strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + key + `","arguments":{}}}`)}).Status,
	}
	events := flushedAudit(t, a)
	b, err := json.Marshal(events)
	require.NoError(t, err)
	require.NotContains(t, string(b), secret, "audit rows")
	for _, id := range []string{"tool-is-key", "method-is-key"} {
		e, ok := findEvent(events, id)
		require.True(t, ok, id)
		require.Contains(t, e.Outcome, publicID(t, key)+".[redacted]", id)
	}
	for id, status := range refused {
		e, ok := findEvent(events, id)
		require.True(t, ok, id)
		require.GreaterOrEqual(t, status, 400, id)
		require.Equal(t, status, e.Status, id)
		require.NotEmpty(t, e.Outcome, "%s: a refused request's row says why", id)
		t.Logf("%s: %d %q", id, e.Status, e.Outcome)
	}
}
