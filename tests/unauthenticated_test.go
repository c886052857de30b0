package tests

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
)

// warmKey uses key until the server answers it from memory. It first
// waits, without requests, until the server has heard every key change
// made so far (the key's own creation among them, which would otherwise
// make it forget the key again): each request spends the key's budget,
// which a slow machine must not exhaust.
func (a *app) warmKey(key string) {
	a.t.Helper()
	made := time.Now()
	waitUntil(a.t, "the key cache to hear every key change", func() bool { return a.store().KeyChangesHeardBy(made) })
	waitUntil(a.t, "the key cache to hold the key", func() bool {
		require.Equal(a.t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
		return a.store().KeyInMemory(publicID(a.t, key))
	})
}

// acquisitions counts the pool's connection acquisitions: every
// statement and transaction of the service takes one (the key cache's
// listener has a connection of its own).
func (a *app) acquisitions() int64 { return a.store().Pool().Stat().AcquireCount() }

// randomKey is a well-formed key no server issued.
func randomKey() string {
	return "fsk_" + strings.ToLower(rand.Text()[:20]) + "." + strings.Repeat("s", 43)
}

// Once an address has spent its budget, a flood of random keys from it is
// refused before any lookup: 400 of them cost no database round trip
// (at most 40 allowed), while a key the server holds in memory is still
// served. A key or session token the server does not hold is refused
// too, until the window ends: its lookup is work for an address with no
// budget left.
func TestSpentAddressCostsNoLookup(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.RateLimit, c.AuditFlushInterval = 20, time.Hour }))
	a.addRestaurants("r1")
	good := a.newKey(grant("r1", "deliveries:read"))
	cold := a.newKey(grant("r1", "deliveries:read"))
	a.warmKey(good)
	for range 20 {
		requireProblem(t, a.getAs(randomKey(), "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	}
	before := a.acquisitions()
	for range 400 {
		require429(t, a.getAs(randomKey(), "/v1/restaurants"))
	}
	spent := a.acquisitions() - before
	t.Logf("400 random keys from a spent address: %d pool acquisitions", spent)
	require.LessOrEqual(t, spent, int64(40))
	require.Equal(t, http.StatusOK, a.getAs(good, "/v1/restaurants").Status, "a key held in memory is served")
	require429(t, a.getAs(cold, "/v1/restaurants"))
	require429(t, a.getAs("fst_"+strings.ToLower(rand.Text()[:20])+"."+strings.Repeat("t", 43), "/v1/restaurants"))

	// The flood (every 429 here) adds a row per minute and shape to the
	// audit trail, not one per request.
	var rows int
	var requests int64
	for _, e := range flushedAudit(t, a) {
		if e.Status == http.StatusTooManyRequests {
			rows++
		}
	}
	for _, c := range flushedCounts(t, a) {
		if c.Status == http.StatusTooManyRequests {
			rows++
			requests += c.Requests
		}
	}
	t.Logf("402 refusals: %d audit rows", rows)
	require.LessOrEqual(t, rows, 60)
	require.Equal(t, int64(402), requests, "every refusal is counted")
}

// An unknown public id is looked up once, then remembered: a client
// repeating it costs no database round trip.
func TestUnknownKeyIsRememberedBriefly(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	key := randomKey()
	requireProblem(t, a.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	before := a.acquisitions()
	for range 100 {
		requireProblem(t, a.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	}
	require.Zero(t, a.acquisitions()-before, "the same unknown id, 100 more times")
	before = a.acquisitions()
	requireProblem(t, a.getAs(randomKey(), "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.Equal(t, int64(1), a.acquisitions()-before, "another id is looked up")
}

// /health/version answers from memory: a flood of it costs one query.
func TestHealthVersionFloodCostsOneQuery(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	latest, err := store.LatestMigration()
	require.NoError(t, err)
	before := a.acquisitions()
	rs := concurrently(200, func() response { return a.get("/health/version") })
	for _, r := range rs {
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, string(r.Body), fmt.Sprintf(`"schemaVersion":%d`, latest))
	}
	require.LessOrEqual(t, a.acquisitions()-before, int64(1), "200 answers, at most one query")
}

// The service's connections never JIT-compile: the schema version's
// statement, costed past every JIT threshold with sequential scans off,
// runs without it.
func TestServiceConnectionsRunNoJIT(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := context.Background()
	var jit string
	require.NoError(t, a.store().Pool().QueryRow(ctx, "SHOW jit").Scan(&jit))
	require.Equal(t, "off", jit)
	var plan string
	require.NoError(t, a.store().Pool().QueryRow(ctx,
		"EXPLAIN (ANALYZE, FORMAT JSON) SELECT COALESCE(max(version_id), 0)::bigint AS version FROM goose_db_version WHERE is_applied").Scan(&plan))
	require.NotContains(t, plan, `"JIT"`, plan)
}
