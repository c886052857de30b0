package tests

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/internal/version"
)

// families is one scrape of /metrics, parsed by the Prometheus text parser.
type families map[string]*dto.MetricFamily

// opsURL is the base URL of the app's operator endpoints.
func (a *app) opsURL() string {
	a.opsOnce.Do(func() { a.ops = httptest.NewServer(a.svc.OpsHandler()) })
	return a.ops.URL
}

// scrape reads /metrics as Prometheus does: over HTTP, from the operator
// handler on its own listener, in the text format (legacy metric and label
// names only). Counters are read after the responses they count: the
// service observes a request before its buffered response is flushed, so a
// client that has read a whole answer finds it counted.
func (a *app) scrape() families {
	a.t.Helper()
	return scrapeURL(a.t, a.opsURL())
}

// scrapeURL scrapes the operator listener at base (a serve process's).
func scrapeURL(t testing.TB, base string) families {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.LegacyValidation)
	f, err := p.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	return f
}

// series are the metrics of family name whose labels include every pair
// of kv (name, value, name, value...).
func (f families) series(name string, kv ...string) []*dto.Metric {
	var out []*dto.Metric
	fam, ok := f[name]
	if !ok {
		return nil
	}
next:
	for _, m := range fam.Metric {
		for i := 0; i+1 < len(kv); i += 2 {
			if label(m, kv[i]) != kv[i+1] {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value sums counters and gauges, or histogram sample counts, over the
// matching series; 0 when there is none.
func (f families) value(name string, kv ...string) float64 {
	var v float64
	for _, m := range f.series(name, kv...) {
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		}
	}
	return v
}

// histSum sums the sample sums of the matching histogram series.
func (f families) histSum(name string, kv ...string) float64 {
	var v float64
	for _, m := range f.series(name, kv...) {
		v += m.Histogram.GetSampleSum()
	}
	return v
}

// deltas is after minus before for every series of family name, keyed by
// the values of the labels named in by, joined with "/"; series that did
// not move are left out.
func deltas(before, after families, name string, by ...string) map[string]float64 {
	key := func(m *dto.Metric) string {
		parts := make([]string, len(by))
		for i, l := range by {
			parts[i] = label(m, l)
		}
		return strings.Join(parts, "/")
	}
	out := map[string]float64{}
	for _, m := range after.series(name) {
		out[key(m)] += after.value(name, labelPairs(m)...)
	}
	for _, m := range before.series(name) {
		out[key(m)] -= before.value(name, labelPairs(m)...)
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func labelPairs(m *dto.Metric) []string {
	var kv []string
	for _, l := range m.Label {
		kv = append(kv, l.GetName(), l.GetValue())
	}
	return kv
}

// Three 404s on one route add three to that route's 404 series, three
// samples to its duration and size histograms (the sizes summing to the
// bodies the client read), and nothing to any other series.
func TestMetricsHTTPRequests(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	// The OpenAPI document's form of the route, as the access log, the
	// audit trail and the docs write it: a filter copied from one works
	// on the others.
	const route = "/v1/restaurants/{restaurantId}/deliveries/{deliveryId}"

	before := a.scrape()
	var bodyBytes int
	for _, id := range []string{"nope-1", "nope-2", "nope-3"} {
		r := a.getAs(key, "/v1/restaurants/r1/deliveries/"+id)
		requireProblem(t, r, http.StatusNotFound, "not-found")
		bodyBytes += len(r.Body)
	}
	after := a.scrape()
	require.Equal(t, map[string]float64{route + "/GET/404": 3},
		deltas(before, after, "foodsafe_http_requests_total", "route", "method", "code"))
	require.Equal(t, map[string]float64{route + "/GET": 3},
		deltas(before, after, "foodsafe_http_request_duration_seconds", "route", "method"))
	require.Equal(t, map[string]float64{route + "/GET": 3},
		deltas(before, after, "foodsafe_http_response_size_bytes", "route", "method"))
	require.Equal(t, float64(bodyBytes),
		after.histSum("foodsafe_http_response_size_bytes", "route", route)-before.histSum("foodsafe_http_response_size_bytes", "route", route))
	require.Equal(t, 0.0, after.value("foodsafe_http_requests_in_flight"))

	// Unmatched paths share one label, whatever the path; a method no
	// route knows is folded into OTHER.
	before = after
	requireProblem(t, a.get("/no/such/path/r1"), http.StatusNotFound, "not-found")
	requireProblem(t, a.get("/another/unknown"), http.StatusNotFound, "not-found")
	requireProblem(t, a.do(req{Method: "BREW", Path: "/v1/restaurants"}), http.StatusMethodNotAllowed, "method-not-allowed")
	requireProblem(t, a.do(req{Method: http.MethodDelete, Path: "/v1/restaurants"}), http.StatusMethodNotAllowed, "method-not-allowed")
	require.Equal(t, http.StatusOK, a.get("/health/live").Status)
	after = a.scrape()
	require.Equal(t, map[string]float64{
		"(unmatched)/GET/404":    2,
		"(unmatched)/OTHER/405":  1,
		"(unmatched)/DELETE/405": 1,
		"/health/live/GET/200":   1,
	}, deltas(before, after, "foodsafe_http_requests_total", "route", "method", "code"))
}

// Every authentication outcome is counted once per request, by credential
// kind, and nothing else moves.
func TestMetricsAuthOutcomes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var offset time.Duration
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(offset) }))
	a.addRestaurants("r1", "r2")
	k := a.newRefusedKeys()
	device := a.newKey(grant("r1", "areas:write"), grant("r2", "areas:write"))

	before := a.scrape()
	unauthorized := func(h string) {
		t.Helper()
		hdr := map[string]string{}
		if h != "" {
			hdr["Authorization"] = h
		}
		requireProblem(t, a.do(req{Path: "/v1/restaurants", Header: hdr}), http.StatusUnauthorized, "unauthorized")
	}
	unauthorized("")
	unauthorized("Basic dXNlcjpwYXNz")
	unauthorized("Bearer not-a-key")
	unauthorized("Bearer " + auth.NewKey().Full)
	unauthorized("Bearer " + k.wrongSecret)
	unauthorized("Bearer " + k.revoked)
	unauthorized("Bearer " + k.expired)
	unauthorized("Bearer " + k.noGrants)
	unauthorized("Bearer " + auth.NewToken().Full)
	require.Equal(t, http.StatusOK, a.getAs(k.good, "/v1/restaurants").Status)

	var s sessionDoc
	a.openSession(device, nil).JSON(t, &s) // key ok
	var r2 sessionDoc
	a.openSession(device, map[string]any{"restaurantId": "r2"}).JSON(t, &r2) // key ok
	require.Equal(t, http.StatusOK, a.getAs(s.AccessToken, "/v1/restaurants").Status)
	// A grant removed behind the CLI's back (keys ungrant also deletes the
	// token; this is the check that remains at authentication).
	_, err := a.store().Pool().Exec(context.Background(),
		`DELETE FROM key_grants g USING api_keys k WHERE g.key_id = k.id AND k.public_id = $1 AND g.restaurant_id = 'r1'`, publicID(t, device))
	require.NoError(t, err)
	unauthorized("Bearer " + s.AccessToken) // grants-changed
	mu.Lock()
	offset = 2 * time.Hour
	mu.Unlock()
	unauthorized("Bearer " + r2.AccessToken) // expired

	after := a.scrape()
	require.Equal(t, map[string]float64{
		"none/missing":           1,
		"none/malformed":         2,
		"key/unknown":            2,
		"key/revoked":            1,
		"key/expired":            1,
		"key/no-grants":          1,
		"key/ok":                 3,
		"session/unknown":        1,
		"session/ok":             1,
		"session/grants-changed": 1,
		"session/expired":        1,
	}, deltas(before, after, "foodsafe_authentications_total", "credential", "outcome"))
}

// A database that cannot decide an authentication counts as outcome error.
func TestMetricsAuthError(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	before := a.scrape()
	a.svc.Store.Close() // the pool refuses every query from now on
	requireProblem(t, a.getAs(key, "/v1/restaurants"), http.StatusServiceUnavailable, "dependency-unavailable")
	after := a.scrape()
	require.Equal(t, map[string]float64{"key/error": 1},
		deltas(before, after, "foodsafe_authentications_total", "credential", "outcome"))
}

// 429s are counted by bucket; the backend gauge names the store the
// limiter counts in, and a Redis failure is one fallback.
func TestMetricsRateLimiter(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		a := newApp(t, withRateLimit(1))
		a.addRestaurants("r1")
		key := a.newKey(grant("r1", "deliveries:read"))
		before := a.scrape()
		require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
		require429(t, a.getAs(key, "/v1/restaurants"))
		require429(t, a.getAs(key, "/v1/restaurants"))
		requireProblem(t, a.get("/nowhere"), http.StatusNotFound, "not-found")
		require429(t, a.get("/nowhere"))
		after := a.scrape()
		require.Equal(t, map[string]float64{"key": 2, "ip": 1}, deltas(before, after, "foodsafe_ratelimit_limited_total", "bucket"))
		require.Equal(t, 1.0, after.value("foodsafe_ratelimit_backend", "backend", "memory"))
		require.Equal(t, 0.0, after.value("foodsafe_ratelimit_backend", "backend", "redis"))
		require.Equal(t, 0.0, after.value("foodsafe_ratelimit_backend", "backend", "fallback"))
		require.Equal(t, 0.0, after.value("foodsafe_ratelimit_fallbacks_total"))
	})
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		a := newApp(t, withSharedRedis(testRedisURL(t), 100, "foodsafe-test:"+rand8()))
		// An unknown route is limited per client IP (the docs are not).
		requireProblem(t, a.get("/nowhere"), http.StatusNotFound, "not-found")
		f := a.scrape()
		require.Equal(t, 1.0, f.value("foodsafe_ratelimit_backend", "backend", "redis"))
		require.Equal(t, 0.0, f.value("foodsafe_ratelimit_backend", "backend", "fallback"))
		require.Equal(t, 0.0, f.value("foodsafe_ratelimit_fallbacks_total"))
	})
	t.Run("redis down", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := ln.Addr().String()
		require.NoError(t, ln.Close())
		a := newApp(t, withConfig(func(c *config.Config) { c.RedisURL = "redis://" + dead + "/0" }))
		require.Equal(t, 0.0, a.scrape().value("foodsafe_ratelimit_fallbacks_total"))
		// One rate-limited request meets the dead Redis: one fallback, then
		// memory. (An unknown route is limited per client IP; the docs are
		// not limited at all.)
		requireProblem(t, a.get("/nowhere"), http.StatusNotFound, "not-found")
		f := a.scrape()
		require.Equal(t, 1.0, f.value("foodsafe_ratelimit_fallbacks_total"))
		require.Equal(t, 1.0, f.value("foodsafe_ratelimit_backend", "backend", "fallback"))
		require.Equal(t, 0.0, f.value("foodsafe_ratelimit_backend", "backend", "redis"))
	})
}

func rand8() string { return auth.NewKey().Full[4:12] }

// Ingest outcomes by write and collection: a first write is applied, the
// same again replayed, other content under the same id conflicted, a bad
// body rejected with its problem type; uploads add their bytes; a digest
// mismatch is counted. Refusals before the handler (unknown collection,
// missing scope) are not ingest writes.
func TestMetricsIngest(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "cleaning-task-pictures:write", "deliveries:write", "delivery-images:write"))
	const pics = "cleaning-task-pictures"

	before := a.scrape()
	body := snapshot("r1", "a1", "m1", 1_700_000_000_000, false, area("Kitchen"))
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "areas", "a1", "m1", body).Status)
	replay := a.ingest(key, "r1", "areas", "a1", "m1", body)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	requireProblem(t, a.ingest(key, "r1", "areas", "a1", "m1", snapshot("r1", "a1", "m1", 1_700_000_000_000, false, area("Bar"))),
		http.StatusConflict, "conflict")
	requireProblem(t, a.ingest(key, "r1", "areas", "a1", "m2", map[string]any{"id": "a1"}), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.ingest(key, "r1", "fridges", "a1", "m3", body), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.ingest(key, "r1", "products", "p1", "m4", body), http.StatusForbidden, "forbidden")

	a.put(key, "r1", pics, "pic", "m5", picture("p.jpg", nil))
	photo := []byte("a photograph of a clean floor")
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", pics, "pic", "p.jpg"), "image/jpeg", digestHeader(photo), photo).Status)
	require.Equal(t, "true", a.upload(key, assetPath("r1", pics, "pic", "p.jpg"), "image/jpeg", digestHeader(photo), photo).Header.Get("Idempotent-Replayed"))
	requireProblem(t, a.upload(key, assetPath("r1", pics, "pic", "p.jpg"), "image/jpeg", digestHeader([]byte("other")), photo),
		http.StatusBadRequest, "invalid-request")

	require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
	requireProblem(t, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 2000)), http.StatusConflict, "conflict")
	crate := photoBytes("image/png", 5)
	require.Equal(t, http.StatusOK, a.upload(key, "/v1/ingest/restaurants/r1/deliveries/d1/images/i1", "image/png", digestHeader(crate), crate).Status)
	after := a.scrape()

	require.Equal(t, map[string]float64{
		"mutation/areas/applied":        1,
		"mutation/areas/replayed":       1,
		"mutation/areas/conflicted":     1,
		"mutation/areas/rejected":       1,
		"mutation/" + pics + "/applied": 1,
		"asset/" + pics + "/applied":    1,
		"asset/" + pics + "/replayed":   1,
		"asset/" + pics + "/rejected":   1,
		"delivery//applied":             1,
		"delivery//conflicted":          1,
		"delivery-image//applied":       1,
	}, deltas(before, after, "foodsafe_ingest_writes_total", "write", "collection", "outcome"))
	require.Equal(t, map[string]float64{
		"mutation/areas/invalid-request":     1,
		"asset/" + pics + "/invalid-request": 1,
	}, deltas(before, after, "foodsafe_ingest_rejections_total", "write", "collection", "reason"))
	require.Equal(t, map[string]float64{"asset/" + pics: 2, "delivery-image/": 1},
		deltas(before, after, "foodsafe_ingest_uploads_verified_total", "write", "collection"))
	require.Equal(t, map[string]float64{"asset/" + pics: float64(2 * len(photo)), "delivery-image/": float64(len(crate))},
		deltas(before, after, "foodsafe_ingest_upload_bytes_total", "write", "collection"))
	require.Equal(t, map[string]float64{"asset/" + pics: 1},
		deltas(before, after, "foodsafe_ingest_digest_mismatches_total", "write", "collection"))
}

// Walk pages are counted first or next, with the items they carry; refused
// cursors by reason.
func TestMetricsWalks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "deliveries:write", "deliveries:read"))
	for _, id := range []string{"a1", "a2", "a3"} {
		a.put(key, "r1", "areas", id, "m-"+id, area(id))
	}
	a.seedDelivery("r1", "d1", 1000)
	a.seedDelivery("r1", "d2", 2000)

	before := a.scrape()
	var p1, p2 walkPage
	a.getAs(key, recordsPath("r1", "areas")+"?limit=2").JSON(t, &p1)
	require.Len(t, p1.Data, 2)
	require.NotNil(t, p1.NextCursor)
	a.getAs(key, recordsPath("r1", "areas")+"?limit=2&cursor="+url.QueryEscape(*p1.NextCursor)).JSON(t, &p2)
	require.Len(t, p2.Data, 1)
	pages := a.walkDeliveries(key, "r1", window(0, 10_000, 1))
	require.Len(t, pages, 2)

	requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit=2&cursor=garbage"), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit=3&cursor="+url.QueryEscape(*p1.NextCursor)), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.getAs(key, deliveriesPath("r1", window(0, 10_000, 1))+"&cursor=garbage"), http.StatusBadRequest, "invalid-request")
	mu.Lock()
	now = now.Add(a.cfg.CursorTTL + time.Minute)
	mu.Unlock()
	requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit=2&cursor="+url.QueryEscape(*p1.NextCursor)), http.StatusBadRequest, "invalid-request")
	after := a.scrape()

	require.Equal(t, map[string]float64{"records/first": 1, "records/next": 1, "deliveries/first": 1, "deliveries/next": 1},
		deltas(before, after, "foodsafe_walk_pages_total", "walk", "page"))
	require.Equal(t, map[string]float64{"records": 3, "deliveries": 2},
		deltas(before, after, "foodsafe_walk_items_total", "walk"))
	require.Equal(t, map[string]float64{"records/malformed": 1, "records/mismatch": 1, "records/expired": 1, "deliveries/malformed": 1},
		deltas(before, after, "foodsafe_walk_cursor_refusals_total", "walk", "reason"))
}

// The audit families, driven by a real outage: while a lock blocks the
// COPY, events queue (buffered), the one beyond the buffer is dropped; once
// the lock goes, everything queued is written.
func TestMetricsAuditBufferAndDrops(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) {
		c.AuditBatchSize = 1
		c.AuditBufferSize = 2
		c.AuditFlushInterval = time.Hour
	}))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	ctx := context.Background()
	pool := a.store().Pool()
	lock, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `LOCK TABLE audit_events IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	// Authenticated requests: recorded one row each.
	requireProblem(t, a.getAs(key, "/v1/restaurants/audited-1/collections"), http.StatusNotFound, "not-found")
	// The writer took that event and its COPY now waits for the lock.
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'audit_events' AND NOT l.granted
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting))
		return waiting > 0
	}, 10*time.Second, 10*time.Millisecond)
	for i := range 3 {
		requireProblem(t, a.getAs(key, "/v1/restaurants/audited-more-"+string(rune('a'+i))+"/collections"), http.StatusNotFound, "not-found")
	}
	f := a.scrape()
	require.Equal(t, 3.0, f.value("foodsafe_audit_buffered_events"), "two queued and one being written")
	require.Equal(t, 1.0, f.value("foodsafe_audit_events_dropped_total", "reason", "buffer-full"))
	require.Equal(t, 0.0, f.value("foodsafe_audit_events_dropped_total", "reason", "batch-failed"))
	require.Equal(t, 0.0, f.value("foodsafe_audit_events_written_total"))

	require.NoError(t, lock.Commit(ctx))
	require.NoError(t, a.svc.Audit.Close(ctx))
	f = a.scrape()
	require.Equal(t, 0.0, f.value("foodsafe_audit_buffered_events"))
	require.Equal(t, 3.0, f.value("foodsafe_audit_events_written_total"))
	require.Equal(t, 3.0, f.value("foodsafe_audit_batch_duration_seconds"), "three batches of one")
	require.Equal(t, 0.0, f.value("foodsafe_audit_batch_failures_total"))
	require.Equal(t, 1.0, f.value("foodsafe_audit_events_dropped_total"))
}

// The pool, the Go runtime, the process and the build are all exposed.
func TestMetricsPoolRuntimeBuild(t *testing.T) {
	t.Parallel()
	// No audit flush in between: it would acquire a connection too.
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	before := a.scrape()
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
	f := a.scrape()
	require.Positive(t, f.value("foodsafe_db_pool_max_connections"))
	require.Positive(t, f.value("foodsafe_db_pool_total_connections"))
	require.Equal(t, 0.0, f.value("foodsafe_db_pool_acquired_connections"), "no query in flight")
	require.Equal(t, 1.0, f.value("foodsafe_db_pool_acquires_total")-before.value("foodsafe_db_pool_acquires_total"),
		"a key lookup is one acquisition")
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"promhttp_metric_handler_requests_total"} {
		require.Contains(t, f, name)
	}
	require.Equal(t, 1.0, f.value("foodsafe_build_info", "version", version.Version, "commit", version.Commit, "goversion", version.GoVersion()))
}

// No series carries a restaurant id, a key id, a secret or a raw path, in
// its label names or values, after traffic full of them: every family is
// walked. Route labels are templates of the route table.
func TestMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(40))
	restaurants := []string{"bistro-label-probe-4711", "cafe-label-probe-0815"}
	a.addRestaurants(restaurants...)
	device := a.newKey(grant(restaurants[0], "areas:write", "areas:read", "drive-files:write", "deliveries:write", "deliveries:read"))
	reader := a.newKey(grant(restaurants[1], "areas:read"))
	var tok sessionDoc
	a.openSession(device, nil).JSON(t, &tok)
	keys := []string{device, reader, tok.AccessToken, auth.NewKey().Full}

	a.put(device, restaurants[0], "areas", "rec-label-probe-1", "mut-label-probe-1", area("x"))
	a.put(tok.AccessToken, restaurants[0], "drive-files", "doc-label-probe", "mut-label-probe-2",
		map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1, "asset": map[string]any{"objectKey": "o", "status": "pending"}})
	b := []byte("document bytes")
	a.upload(device, assetPath(restaurants[0], "drive-files", "doc-label-probe", "o"), "application/pdf", digestHeader(b), b)
	a.putJSON(device, "/v1/ingest/restaurants/"+restaurants[0]+"/deliveries/del-label-probe", deliveryJSON("del-label-probe", 1000))
	a.getAs(device, recordsPath(restaurants[0], "areas")+"?limit=1&cursor=cur-label-probe")
	a.getAs(device, deliveriesPath(restaurants[0], window(0, 5000, 1)))
	a.getAs(reader, recordsPath(restaurants[1], "areas")+"/rec-label-probe-1")
	a.getAs(reader, recordsPath(restaurants[0], "areas"))
	a.getAs(keys[3], "/v1/restaurants")
	a.get("/raw-path-label-probe/" + restaurants[0])
	a.get("/v1/restaurants/" + restaurants[0] + "/unknown-label-probe")
	a.get("/v1/files/" + restaurants[0] + "/feed?type=x&expires=1&signature=sig-label-probe")
	for range 45 {
		a.getAs(reader, "/v1/restaurants") // into the 429s
	}

	routes := map[string]bool{"(unmatched)": true}
	for _, r := range a.svc.Engine.Routes() {
		routes[openapi.OpenAPIPath(r.Path)] = true
	}
	forbidden := append([]string{"label-probe"}, restaurants...)
	for _, k := range keys {
		forbidden = append(forbidden, publicID(t, k), secretOf(k))
	}
	badName := regexp.MustCompile(`(?i)restaurant|key|path|url|user|client|ip$|_id$|^id$`)
	f := a.scrape()
	require.Greater(t, len(f), 50)
	for name, fam := range f {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				require.False(t, badName.MatchString(l.GetName()), "%s has a label named %q", name, l.GetName())
				for _, s := range forbidden {
					require.NotContains(t, l.GetValue(), s, "%s{%s=%q}", name, l.GetName(), l.GetValue())
				}
				if l.GetName() == "route" {
					require.True(t, routes[l.GetValue()], "%s: route %q is not a route template", name, l.GetValue())
				}
			}
		}
	}
	require.Positive(t, f.value("foodsafe_ratelimit_limited_total", "bucket", "key"), "the traffic did reach the 429s")
	require.Positive(t, f.value("foodsafe_ingest_writes_total", "write", "asset", "outcome", "applied"), "the traffic did upload")
}

// The operator listener of a served app: /metrics and pprof there, never
// on the API port; scrapes are neither requests of the API nor audited.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	cfg := testConfig(testdb.URL(t))
	cfg.BlobDir = t.TempDir()
	svc, err := fsapp.New(context.Background(), cfg, slog.New(slog.DiscardHandler), fsapp.Options{})
	require.NoError(t, err)
	api, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ops, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, api, ops) }()
	apiURL, opsURL := "http://"+api.Addr().String(), "http://"+ops.Addr().String()
	get := func(u string) (int, string) {
		t.Helper()
		res, err := http.Get(u)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	for _, p := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline"} {
		code, _ := get(apiURL + p)
		require.Equal(t, http.StatusNotFound, code, "%s is not on the API port", p)
	}
	code, body := get(opsURL + "/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine")
	code, _ = get(opsURL + "/v1/restaurants")
	require.Equal(t, http.StatusNotFound, code, "the API is not on the operator port")
	for range 3 {
		code, body = get(opsURL + "/metrics")
		require.Equal(t, http.StatusOK, code)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	f, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	var apiRequests float64
	for _, m := range f["foodsafe_http_requests_total"].GetMetric() {
		apiRequests += m.Counter.GetValue()
	}
	require.Equal(t, 3.0, apiRequests, "the three 404s of the API port, no scrape")
	require.Equal(t, 2.0, families(f).value("promhttp_metric_handler_requests_total", "code", "200"),
		"the scrapes count themselves (the one being served is not yet counted)")

	cancel()
	require.NoError(t, <-served)
	_, err = http.Get(opsURL + "/metrics")
	require.Error(t, err, "the operator listener stops with the API")
	st, err := store.Open(context.Background(), cfg.DatabaseURL)
	require.NoError(t, err)
	defer st.Close()
	var audited, other int
	require.NoError(t, st.Pool().QueryRow(context.Background(),
		`SELECT coalesce(sum(requests), 0), count(*) FILTER (WHERE route <> '(unmatched)') FROM audit_counts`).Scan(&audited, &other))
	require.Equal(t, 3, audited, "the API's three 404s are audited (by shape)")
	require.Zero(t, other, "and nothing else: no scrape")
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_events`).Scan(&other))
	require.Zero(t, other)
}

// With FOODSAFE_METRICS_ADDR empty the service records nothing and still
// serves every path that would have been counted.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) {
		c.MetricsAddr = ""
		c.RateLimit = 3
	}))
	require.Nil(t, a.svc.Metrics)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "drive-files:write"))
	a.put(key, "r1", "drive-files", "doc", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "o", "status": "pending"}})
	b := []byte("bytes")
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "doc", "o"), "application/pdf", digestHeader(b), b).Status)
	requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?cursor=garbage"), http.StatusBadRequest, "invalid-request")
	require429(t, a.getAs(key, recordsPath("r1", "areas")))
	requireProblem(t, a.get("/v1/restaurants"), http.StatusUnauthorized, "unauthorized")

	res, err := http.Get(a.opsURL() + "/metrics")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, err = http.Get(a.opsURL() + "/debug/pprof/")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "pprof does not depend on metrics")
}

// A valid W3C traceparent puts its trace id into every log line of the
// request (access log, panic); a malformed one is ignored.
func TestTraceContextInLogs(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRoutes(func(e *gin.Engine) {
		e.GET("/test/panic", func(*gin.Context) { panic("boom") })
	}))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	valid := "00-" + traceID + "-00f067aa0ba902b7-01"

	a.get("/test/panic", "X-Request-ID", "trace-panic", "traceparent", valid)
	lines := a.logLines("trace-panic")
	require.Len(t, lines, 2, "panic, access log: %v", lines)
	for _, l := range lines {
		require.Equal(t, traceID, l["trace_id"], "%v", l)
	}

	cases := map[string]struct {
		header string
		want   string
	}{
		"valid, not sampled":       {"00-" + traceID + "-00f067aa0ba902b7-00", traceID},
		"a later version's fields": {"01-" + traceID + "-00f067aa0ba902b7-01-what-comes-next", traceID},
		"upper-case hex":           {"00-" + strings.ToUpper(traceID) + "-00f067aa0ba902b7-01", ""},
		"version ff":               {"ff-" + traceID + "-00f067aa0ba902b7-01", ""},
		"all-zero trace id":        {"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		"all-zero parent id":       {"00-" + traceID + "-0000000000000000-01", ""},
		"short trace id":           {"00-" + traceID[:30] + "-00f067aa0ba902b7-01", ""},
		"extra field in 00":        {valid + "-extra", ""},
		"not hex":                  {"00-" + traceID[:31] + "g-00f067aa0ba902b7-01", ""},
		"missing flags":            {"00-" + traceID + "-00f067aa0ba902b7", ""},
		"garbage":                  {"hello", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := "trace-" + strings.ReplaceAll(name, " ", "-")
			require.Equal(t, http.StatusOK, a.get("/health/live", "X-Request-ID", id, "traceparent", tc.header).Status)
			lines := a.logLines(id)
			require.Len(t, lines, 1)
			if tc.want == "" {
				require.NotContains(t, lines[0], "trace_id")
			} else {
				require.Equal(t, tc.want, lines[0]["trace_id"])
			}
		})
	}

	// Two traceparent fields are ambiguous: ignored.
	hr, err := http.NewRequest(http.MethodGet, a.srv.URL+"/health/live", nil)
	require.NoError(t, err)
	hr.Header.Set("X-Request-ID", "trace-two-headers")
	hr.Header.Add("traceparent", valid)
	hr.Header.Add("traceparent", valid)
	res, err := a.srv.Client().Do(hr)
	require.NoError(t, err)
	res.Body.Close()
	lines = a.logLines("trace-two-headers")
	require.Len(t, lines, 1)
	require.NotContains(t, lines[0], "trace_id")
}

// logLines are the service's log lines about one request, decoded.
func (a *app) logLines(requestID string) []map[string]any {
	a.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(a.logs.String()), "\n") {
		var m map[string]any
		require.NoError(a.t, json.Unmarshal([]byte(line), &m), "%s", line)
		if m["request_id"] == requestID {
			out = append(out, m)
		}
	}
	return out
}

// One route form everywhere: the access log, the metric labels and the
// audit trail all write a route as the OpenAPI document does
// (/v1/restaurants/{restaurantId}/...), and every route a PromQL filter in
// the docs or the alert rules names is one of them and matches the series
// a request to it makes.
func TestOneRouteForm(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	const route = "/v1/restaurants/{restaurantId}/deliveries"
	before := a.scrape()
	r := a.getAs(key, deliveriesPath("r1", window(0, 1000, 10)), "X-Request-ID", "route-form-1")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	after := a.scrape()
	require.Equal(t, map[string]float64{route + "/GET/200": 1},
		deltas(before, after, "foodsafe_http_requests_total", "route", "method", "code"))

	lines := a.logLines("route-form-1")
	require.NotEmpty(t, lines)
	for _, l := range lines {
		if l["msg"] == "request" {
			require.Equal(t, route, l["route"], "the access log")
		}
	}
	// Every route a filter in the docs or the alert rules names (route="..."),
	// in the route table's OpenAPI form.
	routes := map[string]bool{}
	for _, rt := range a.svc.Engine.Routes() {
		routes[openapi.OpenAPIPath(rt.Path)] = true
	}
	filter := regexp.MustCompile(`route="([^"]*)"`)
	named := 0
	for _, f := range []string{"../docs/operators.md", "../docs/runbook.md", "../docs/performance.md", "../deploy/prometheus/alerts.yml",
		"../deploy/prometheus/alerts_test.yml"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range filter.FindAllStringSubmatch(string(b), -1) {
			require.True(t, routes[m[1]] || m[1] == "(unmatched)", "%s filters on route %q, which no request is labelled with", f, m[1])
			named++
		}
	}
	require.Positive(t, named, "the guide shows a route filter")
	require.Positive(t, after.value("foodsafe_http_requests_total", "route", route, "method", "GET", "code", "200"),
		"the guide's filter matches the series")

	// The audit row, flushed by shutting the app down.
	e, ok := findEvent(flushedAudit(t, a), "route-form-1")
	require.True(t, ok, "the audit row")
	require.Equal(t, route, e.Route, "the audit trail")
}
