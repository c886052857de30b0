package tests

import (
	"context"
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

// The audit writer holds events (flush interval of an hour here) and
// writes them all when the service shuts down.
func TestAuditRecordsAndFlushesOnShutdown(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))

	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants", "X-Request-ID", "audit-ok").Status)
	require.Equal(t, http.StatusUnauthorized, a.getAs("fsk_aaaaaaaaaaaaaaaa."+secretOf(key), "/v1/restaurants", "X-Request-ID", "audit-unknown").Status)
	require.Equal(t, http.StatusUnauthorized, a.get("/v1/restaurants", "X-Request-ID", "audit-missing").Status)
	require.Equal(t, http.StatusNotFound, a.get("/nowhere", "X-Request-ID", "audit-404").Status)
	require.Equal(t, http.StatusUnauthorized, a.get("/v1/restaurants/r1/deliveries?from=0&to=1", "X-Request-ID", "audit-template").Status)
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
	require.WithinDuration(t, time.Now(), ok.At, time.Minute)

	unknown, found := findEvent(events, "audit-unknown")
	require.True(t, found)
	require.Equal(t, 401, unknown.Status)
	require.Equal(t, "unknown", unknown.Outcome)
	require.Equal(t, "aaaaaaaaaaaaaaaa", unknown.KeyPublicID, "the presented public id is kept for support")

	missing, found := findEvent(events, "audit-missing")
	require.True(t, found)
	require.Equal(t, "missing", missing.Outcome)
	require.Empty(t, missing.KeyPublicID)

	nf, found := findEvent(events, "audit-404")
	require.True(t, found)
	require.Equal(t, "(unmatched)", nf.Route)

	tpl, found := findEvent(events, "audit-template")
	require.True(t, found)
	require.Equal(t, "/v1/restaurants/{restaurantId}/deliveries", tpl.Route, "the route in the OpenAPI document's form")

	_, found = findEvent(events, "audit-health")
	require.False(t, found, "successful health probes are not audited")
	require.Len(t, events, 5)
}

func TestAuditFlushesOnInterval(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = 50 * time.Millisecond }))
	a.get("/nowhere", "X-Request-ID", "interval-1")
	require.Eventually(t, func() bool {
		_, ok := findEvent(auditEvents(t, a), "interval-1")
		return ok
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
