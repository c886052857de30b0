package tests

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/examples"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// dbProxy is a TCP fault proxy (toxiproxy, in process) between a server
// and PostgreSQL: stopping it cuts every connection and refuses new ones,
// as a network partition does, without touching the shared PostgreSQL.
type dbProxy struct {
	p *toxiproxy.Proxy
}

func newDBProxy(t testing.TB, dbURL string) (*dbProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	log := zerolog.Nop()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), log)
	p := toxiproxy.NewProxy(srv, "postgres", freeLoopbackAddr(t), u.Host)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	proxied := *u
	proxied.Host = p.Listen
	return &dbProxy{p: p}, proxied.String()
}

// A server restarted in the middle of a walk, then its database cut off
// by a fault proxy: the sync backs off through the refused connections and
// the 503s, resumes the walk with the cursors the first process issued,
// and converges.
func TestSyncSurvivesServerRestartAndDatabaseCut(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	s.a.seedAreas(s.writeKey, 1500)
	proxy, proxied := newDBProxy(t, s.a.cfg.DatabaseURL)
	addr := freeLoopbackAddr(t)
	s.env = append(s.env, "DATABASE_URL="+proxied, "FOODSAFE_ADDR="+addr)
	s.restart(t)
	target := sqliteTarget(t)

	// Narrowed to the restaurant, the run walks stream by stream (a key-wide
	// first sync reads the feed instead: sync_feed_test.go).
	l := startSync(t, s.readKey, "--api", s.p.URL, "--to", target, "--once", "--restaurant", demo.RestaurantID)
	l.waitFor(t, "page 3 of areas", func(e syncEvent) bool { return e.Stream == "areas" && e.Pages == 3 })
	// Freeze the sync so the restart happens mid-walk, whatever its pace.
	l.signal(t, syscall.SIGSTOP)
	s.p.stop(t)
	l.signal(t, syscall.SIGCONT)
	l.waitFor(t, "a refused connection", func(e syncEvent) bool { return e.Event == "wait" && e.Reason == "unreachable" })
	s.p = startServe(t, s.env...)

	l.waitFor(t, "page 8 of areas", func(e syncEvent) bool { return e.Stream == "areas" && e.Pages == 8 })
	l.signal(t, syscall.SIGSTOP)
	proxy.p.Stop() // the server loses its database
	l.signal(t, syscall.SIGCONT)
	l.waitFor(t, "a 503", func(e syncEvent) bool { return e.Event == "wait" && strings.HasPrefix(e.Reason, "503") })
	require.NoError(t, proxy.p.Start())

	res := l.wait(t)
	require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
	sum := res.summary(t)
	require.GreaterOrEqual(t, sum.Unavailable, int64(2), "it met the restart and the 503")
	require.Zero(t, sum.Failed)
	require.Contains(t, res.Stderr, "service unavailable; backing off")
	require.Contains(t, res.Stderr, "requestId=sync-", "failures are logged with the request id")
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
}

// A kept changes position the server refuses (400: here, the server's
// cursor key was rotated) sends the mirror back to the key-wide feed,
// which replaces the copy of every stream: rows the server does not have
// are dropped. A stream whose own cursor is refused goes back to a full
// walk of it.
func TestSyncRebuildsOnRefusedCursor(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	target := sqliteTarget(t)
	args := []string{"--api", "", "--to", target, "--json"}
	sync := func() syncResult {
		args[1] = s.p.URL
		r := runSync(t, s.readKey, args...)
		require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
		return r
	}
	sync()
	db, q := openTarget(t, target)
	_, err := db.Exec(q(`INSERT INTO areas (restaurant_id, id, sequence, deleted, data, captured_at, received_at, mutation_id, payload_version)
		VALUES (?, 'ghost', '999999', false, '{"name":"ghost"}', 1, 1, 'm-ghost', 1)`), demo.RestaurantID)
	require.NoError(t, err)

	s.restart(t, "FOODSAFE_CURSOR_KEY="+strings.Repeat("r", 40))
	r := sync()
	require.Contains(t, r.Stderr, "changes position refused; reading every record again through the key-wide feed")
	require.Contains(t, r.Stderr, "the first listing dropped records the server no longer has")
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM areas WHERE id = 'ghost'`).Scan(&n))
	require.Zero(t, n, "the rebuild replaced the copy")

	// A server that refuses every cursor it issues (say, replicas with
	// different cursor keys) fails the stream after one fallback; it does
	// not loop. (A run narrowed to the collection walks it: one of the
	// key's whole scope would catch up through the feed instead.)
	s.a.seedAreas(s.writeKey, 250) // a walk of several pages
	var areas atomic.Int64
	api := faultProxy(t, s.p.URL, func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/collections/areas/records") {
			return false
		}
		areas.Add(1)
		if r.URL.Query().Get("cursor") == "" {
			return false
		}
		writeProblem(w, r, http.StatusBadRequest, "invalid-request")
		return true
	})
	bad := runSync(t, s.readKey, "--api", api, "--to", target, "--json", "--collections", "areas")
	require.Equal(t, 1, bad.Code, "stderr:\n%s", bad.Stderr)
	require.Contains(t, bad.Stderr, "areas: GET /v1/restaurants/demo-bistro/collections/areas/records: 400 invalid-request")
	require.LessOrEqual(t, areas.Load(), int64(6), "changes cursor refused, a rebuild refused twice, then the stream fails")
	sync()
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
}

// faultProxy is an HTTP reverse proxy in front of a real server; inject
// sees every request first and answers it itself when it returns true.
func faultProxy(t testing.TB, upstream string, inject func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	return faultProxyAt(t, "127.0.0.1:0", upstream, inject)
}

// faultProxyAt is faultProxy listening on addr: the address a server was
// given as its FOODSAFE_BASE_URL, so that the signed URLs it hands out
// lead through the proxy, as they lead through a deployment's.
func faultProxyAt(t testing.TB, addr, upstream string, inject func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !inject(w, r) {
			rp.ServeHTTP(w, r)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// writeProblem answers a problem document with the request's id.
func writeProblem(w http.ResponseWriter, r *http.Request, status int, suffix string) {
	rid := r.Header.Get("X-Request-ID")
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Request-ID", rid)
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"/problems/%s","title":"injected","status":%d,"detail":"injected","requestId":%q}`, suffix, status, rid)
}

// Files: every asset and delivery image is downloaded through its signed
// URL without the key, verified, stored once per digest; a URL refused as
// expired (403) makes the sync ask for a fresh list and try again.
func TestSyncFilesAskForFreshURLs(t *testing.T) {
	t.Parallel()
	// The server hands out signed URLs on its base URL (never on a Host a
	// request names): the proxy's, so downloads go through it. inject is
	// what the proxy does to them, swapped between the two parts below.
	proxyAddr := freeLoopbackAddr(t)
	s := newDemoServer(t, "FOODSAFE_BASE_URL=http://"+proxyAddr)
	var inject atomic.Value
	api := faultProxyAt(t, proxyAddr, s.p.URL, func(w http.ResponseWriter, r *http.Request) bool {
		return inject.Load().(func(w http.ResponseWriter, r *http.Request) bool)(w, r)
	})
	var mu sync.Mutex
	refused := map[string]bool{}
	var downloads, withKey atomic.Int64
	inject.Store(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasPrefix(r.URL.Path, "/v1/files/") {
			return false
		}
		downloads.Add(1)
		if r.Header.Get("Authorization") != "" {
			withKey.Add(1)
		}
		mu.Lock()
		defer mu.Unlock()
		if refused[r.URL.Path] {
			return false
		}
		refused[r.URL.Path] = true // the first try of each file: "expired"
		writeProblem(w, r, http.StatusForbidden, "download-url-expired")
		return true
	})
	target, files := sqliteTarget(t), t.TempDir()
	r := runSync(t, s.readKey, "--api", api, "--to", target, "--files", "--files-dir", files, "--json")
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	require.Contains(t, r.Stderr, "a signed URL expired; asking for fresh ones")
	requireFilesMirrored(t, s.a, target, files, demo.RestaurantID)
	sum := r.summary(t)
	require.Equal(t, int64(len(refused)), sum.Files, "each digest refused once, then fetched once")
	require.Equal(t, 2*sum.Files, downloads.Load())
	require.Zero(t, withKey.Load(), "a signed URL is fetched without the key")

	// One file whose bytes do not match its digest (served corrupted,
	// always): it is not stored, the others are, the run says so (exit 1)
	// and the next run against an honest server completes the set.
	var corrupted atomic.Value
	inject.Store(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasPrefix(r.URL.Path, "/v1/files/") {
			return false
		}
		corrupted.CompareAndSwap(nil, r.URL.Path)
		if corrupted.Load() != r.URL.Path {
			return false
		}
		_, _ = w.Write([]byte("not the bytes you are looking for"))
		return true
	})
	target, files = sqliteTarget(t), t.TempDir()
	bad := runSync(t, s.readKey, "--api", api, "--to", target, "--files", "--files-dir", files, "--json")
	require.Equal(t, 1, bad.Code, "stderr:\n%s", bad.Stderr)
	require.Contains(t, bad.Stderr, "a file could not be mirrored")
	require.Equal(t, sum.Files-1, bad.summary(t).Files, "every other file was stored")
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
	inject.Store(func(http.ResponseWriter, *http.Request) bool { return false }) // an honest server behind it
	good := runSync(t, s.readKey, "--api", s.p.URL, "--to", target, "--files", "--files-dir", files, "--json")
	require.Equal(t, 0, good.Code, "stderr:\n%s", good.Stderr)
	require.Equal(t, int64(1), good.summary(t).Files)
	requireFilesMirrored(t, s.a, target, files, demo.RestaurantID)
	st := s.a.cliSync("status", "--to", target, "--json")
	require.NotContains(t, st.Stdout, "lastError", "the files' failure was cleared by the run that fetched them")
}

// The client rules: a 500 is retried once and then reported with its
// request id while the other streams go on (exit 1); a revoked key (401)
// ends the run after one request; a restaurant the key does not reach is
// a clear failure; bad command lines exit 2 before any request, and a key
// given as a flag is refused without being echoed.
func TestSyncClientRules(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)

	t.Run("500: one retry, then the stream fails with the request id; the rest is mirrored", func(t *testing.T) {
		var failed atomic.Int64
		api := faultProxy(t, s.p.URL, func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.Contains(r.URL.Path, "/collections/areas/") {
				return false
			}
			failed.Add(1)
			writeProblem(w, r, http.StatusInternalServerError, "internal-error")
			return true
		})
		target := sqliteTarget(t)
		// Narrowed to the restaurant, the run walks stream by stream (a key-wide
		// first sync reads the feed instead: sync_feed_test.go).
		r := runSync(t, s.readKey, "--api", api, "--to", target, "--json", "--restaurant", demo.RestaurantID)
		require.Equal(t, 1, r.Code, "stderr:\n%s", r.Stderr)
		require.Equal(t, int64(2), failed.Load(), "one retry, no more")
		require.Contains(t, r.Stderr, "areas: GET /v1/restaurants/demo-bistro/collections/areas/records: 500 internal-error: injected (requestId sync-")
		sum := r.summary(t)
		require.Equal(t, 1, sum.Failed)
		require.Equal(t, demoStreams, sum.Streams)
		others := []string{"temperature-records", "users", "cleaning-tasks"}
		requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark, others...)
		st := s.a.cliSync("status", "--to", target)
		require.Contains(t, st.Stdout, "500 internal-error", "status shows the stream's last error")
	})

	t.Run("401: a revoked key ends the run after one request", func(t *testing.T) {
		key := s.a.newKey(grant(demo.RestaurantID, "areas:read"))
		res := s.a.cli("keys", "revoke", publicID(t, key))
		require.Equal(t, 0, res.Code, res.Stderr)
		r := runSync(t, key, "--api", s.p.URL, "--to", sqliteTarget(t), "--json")
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, "401 unauthorized")
		require.Equal(t, int64(1), r.summary(t).Requests)
		require.NotContains(t, r.Stderr+r.Stdout, secretOf(key))
	})

	t.Run("--every: a revoked key ends the loop; a second run on the target is refused; SIGTERM between runs exits 0", func(t *testing.T) {
		key := s.a.newKey(grant(demo.RestaurantID, "areas:read"))
		res := s.a.cli("keys", "revoke", publicID(t, key))
		require.Equal(t, 0, res.Code, res.Stderr)
		r := runSync(t, key, "--api", s.p.URL, "--to", sqliteTarget(t), "--every", "1s")
		require.Equal(t, 1, r.Code, "a refused key does not poll forever: %s", r.Stderr)

		for _, target := range []string{sqliteTarget(t), testdb.EmptyURL(t)} {
			l := startSync(t, s.readKey, "--api", s.p.URL, "--to", target, "--every", "1h")
			l.waitFor(t, "the first run", func(e syncEvent) bool { return e.Event == "done" })
			second := runSync(t, s.readKey, "--api", s.p.URL, "--to", target)
			require.Equal(t, 1, second.Code)
			require.Contains(t, second.Stderr, "another foodsafe-sync is syncing this target", "one writer per target")
			l.signal(t, syscall.SIGTERM)
			require.Equal(t, 0, l.wait(t).Code, "stopped between runs: a normal stop")
			again := runSync(t, s.readKey, "--api", s.p.URL, "--to", target)
			require.Equal(t, 0, again.Code, "the lock went with the process: %s", again.Stderr)
		}
	})

	t.Run("a restaurant the key does not reach", func(t *testing.T) {
		r := runSync(t, s.readKey, "--api", s.p.URL, "--to", sqliteTarget(t), "--restaurant", "elsewhere")
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, `the key does not reach restaurant "elsewhere"`)
	})

	t.Run("a collection the key cannot read", func(t *testing.T) {
		key := s.a.newKey(grant(demo.RestaurantID, "areas:read"))
		r := runSync(t, key, "--api", s.p.URL, "--to", sqliteTarget(t), "--collections", "areas,users")
		require.Equal(t, 1, r.Code)
		require.Contains(t, r.Stderr, `the key cannot read collection "users"`)
	})

	t.Run("bad input exits 2 before any request", func(t *testing.T) {
		target := sqliteTarget(t)
		for _, tc := range []struct {
			name, key, want string
			args            []string
		}{
			{"key as a flag", s.readKey, "--key: the key is read from FOODSAFE_API_KEY only", []string{"--api", s.p.URL, "--to", target, "--key", s.readKey}},
			{"key as --api-key", s.readKey, "--api-key: the key is read from FOODSAFE_API_KEY only", []string{"--api", s.p.URL, "--to", target, "--api-key=" + s.readKey}},
			{"no key", "", "set FOODSAFE_API_KEY", []string{"--api", s.p.URL, "--to", target}},
			{"key with a control character", "fsk_abc.\x01def", "FOODSAFE_API_KEY holds a character no API key has", []string{"--api", s.p.URL, "--to", target}},
			{"no target", s.readKey, "--api and --to are required", []string{"--api", s.p.URL}},
			{"unknown target", s.readKey, "give sqlite:PATH or a postgres:// URL", []string{"--api", s.p.URL, "--to", "mysql://x"}},
			{"bad api", s.readKey, "give the service's base URL", []string{"--api", "ftp://x", "--to", target}},
			{"once and every", s.readKey, "--once and --every exclude each other", []string{"--api", s.p.URL, "--to", target, "--once", "--every", "1m"}},
			{"negative deadline", s.readKey, "--deadline and --max-failures must not be negative", []string{"--api", s.p.URL, "--to", target, "--deadline", "-1s"}},
			{"negative failure limit", s.readKey, "--deadline and --max-failures must not be negative", []string{"--api", s.p.URL, "--to", target, "--max-failures", "-1"}},
			{"bad tombstones", s.readKey, "--tombstones must be mark or delete", []string{"--api", s.p.URL, "--to", target, "--tombstones", "purge"}},
			{"bad since", s.readKey, "--deliveries-since", []string{"--api", s.p.URL, "--to", target, "--deliveries-since", "yesterday"}},
			{"unknown flag", s.readKey, "unknown flag", []string{"--api", s.p.URL, "--to", target, "--fast"}},
		} {
			r := runSync(t, tc.key, tc.args...)
			require.Equal(t, 2, r.Code, "%s: stderr:\n%s", tc.name, r.Stderr)
			require.Contains(t, r.Stderr, tc.want, tc.name)
			require.NotContains(t, r.Stderr+r.Stdout, secretOf(s.readKey), "%s: the key is never echoed", tc.name)
		}
		_, err := os.Stat(strings.TrimPrefix(target, "sqlite:"))
		require.True(t, os.IsNotExist(err), "nothing was created")
	})
}

// A good HTTP citizen: with a budget smaller than a first sync needs, the
// sync paces itself by X-RateLimit-* and never meets a 429; when someone
// else spent the key's budget, the 429's Retry-After is waited out.
func TestSyncPacesAndHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	const budget = 20
	s := newDemoServer(t, "FOODSAFE_RATE_LIMIT="+strconv.Itoa(budget))
	target := sqliteTarget(t)
	// The demo's history in one window: 130 days back, or back to the
	// document's examples (internal/examples), which the demo loads, if older.
	from := time.Now().AddDate(0, 0, -130)
	if examples.Since.Before(from) {
		from = examples.Since
	}
	since := from.Format("2006-01-02")
	// Narrowed to the restaurant, the run walks stream by stream (a key-wide
	// first sync reads the feed instead: sync_feed_test.go).
	args := []string{"--api", s.p.URL, "--to", target, "--deliveries-since", since, "--json", "--restaurant", demo.RestaurantID}

	first := runSync(t, s.readKey, args...)
	require.Equal(t, 0, first.Code, "stderr:\n%s", first.Stderr)
	sum := first.summary(t)
	require.Greater(t, sum.Requests, int64(budget), "the first sync needs more than one window's budget")
	require.Zero(t, sum.RateLimited, "paced under the budget: no 429")
	require.True(t, slices.ContainsFunc(first.Events, func(e syncEvent) bool { return e.Event == "wait" && e.Reason == "pacing" }))
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)

	// Spend what is left of the window, as another client of the key would.
	for i := 0; i <= budget; i++ {
		r := fetchURL(t, http.MethodGet, s.p.URL+"/v1/restaurants", "Authorization", "Bearer "+s.readKey)
		if r.Status == http.StatusTooManyRequests {
			break
		}
		require.Equal(t, http.StatusOK, r.Status)
	}
	again := runSync(t, s.readKey, args...)
	require.Equal(t, 0, again.Code, "stderr:\n%s", again.Stderr)
	require.Positive(t, again.summary(t).RateLimited)
	require.Contains(t, again.Stderr, "rate limited; waiting Retry-After")
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
}
