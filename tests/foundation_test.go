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
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/server"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/internal/version"
)

func TestHealthLive(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/health/live")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"status":"ok"}`, string(r.Body))
}

func TestHealthReady(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/health/ready")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"status":"ready"}`, string(r.Body))
}

// A database that does not answer makes the process not ready: 503
// dependency-unavailable, within the configured probe timeout.
func TestHealthReadyDatabaseDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens here now
	a := newApp(t,
		withDatabaseURL("postgres://postgres@"+deadAddr+"/foodsafe?sslmode=disable&connect_timeout=2"),
		withConfig(func(c *config.Config) { c.ReadyTimeout = 500 * time.Millisecond }))

	r := a.get("/health/ready")
	p := requireProblem(t, r, http.StatusServiceUnavailable, "dependency-unavailable")
	require.Equal(t, "/health/ready", p.Instance)
	require.NotContains(t, string(r.Body), deadAddr, "no connection details in the body")

	// Liveness does not depend on the database.
	require.Equal(t, http.StatusOK, a.get("/health/live").Status)
	// The version report still answers; the schema version is unknown.
	v := a.get("/health/version")
	require.Equal(t, http.StatusOK, v.Status)
	require.Contains(t, string(v.Body), `"schemaVersion":null`)
}

func TestHealthVersion(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/health/version")
	require.Equal(t, http.StatusOK, r.Status)
	var v httpapi.VersionReport
	r.JSON(t, &v)
	latest, err := store.LatestMigration()
	require.NoError(t, err)
	require.NotZero(t, latest)
	require.NotNil(t, v.SchemaVersion)
	require.Equal(t, latest, *v.SchemaVersion)
	require.Equal(t, version.Version, v.Version)
	require.Equal(t, version.Commit, v.Commit)
	require.True(t, strings.HasPrefix(v.GoVersion, "go"), v.GoVersion)
}

func TestUnknownRouteIsProblem(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, path := range []string{"/nope", "/v1/unknown/thing", "/health/live/", "/"} {
		r := a.get(path)
		p := requireProblem(t, r, http.StatusNotFound, "not-found")
		require.Equal(t, path, p.Instance)
		require.Equal(t, "/problems/not-found", p.Type, "a relative type when FOODSAFE_BASE_URL is unset")
	}
}

// A problem's instance is the request path as the client sent it, a URI
// reference (spec 7): percent-encoded octets stay encoded (a%20b is not
// a b, and demo%2Fbistro is one segment, not two), bytes a URI cannot
// hold are encoded, and a key pasted into the path loses its secret even
// when part of it was percent-encoded.
func TestProblemInstanceIsPathAsSent(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for sent, want := range map[string]string{
		"/v1/restaurants/a%20b/deliveries":                    "/v1/restaurants/a%20b/deliveries",
		"/v1/restaurants/demo%2Fbistro/deliveries?from=1":     "/v1/restaurants/demo%2Fbistro/deliveries",
		"/v1/restaurants/caf%C3%A9/collections":               "/v1/restaurants/caf%C3%A9/collections",
		"/n%6Fpe":                                             "/n%6Fpe",
		"/v1/restaurants/a\"b{c}/deliveries":                  "/v1/restaurants/a%22b%7Bc%7D/deliveries",
		"/v1/restaurants/fsk_abcdefghijklmnop%2Etopsecret/xy": "/v1/restaurants/fsk_abcdefghijklmnop%2E[redacted]/xy",
	} {
		res := rawExchange(t, strings.TrimPrefix(a.srv.URL, "http://"), "GET "+sent+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		var p problemDoc
		require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
		res.Body.Close()
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusNotFound}, res.StatusCode, sent)
		require.Equal(t, want, p.Instance, "instance of %s", sent)
		require.NotContains(t, p.Instance, "topsecret")
		_, err := url.Parse(p.Instance)
		require.NoError(t, err, "a URI reference")
	}
}

// The problem type is never chosen by the caller: without
// FOODSAFE_BASE_URL, a request naming any Host gets the same relative type,
// and so does the problem type page (cached publicly).
func TestProblemTypeIgnoresHost(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]string{"unset": "", "configured": "https://api.example.test"} {
		t.Run(name, func(t *testing.T) {
			a := newApp(t, withConfig(func(c *config.Config) { c.BaseURL = base }))
			for _, host := range []string{"evil", "evil.example:8443", "attacker.test"} {
				hr, err := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/restaurants", nil)
				require.NoError(t, err)
				hr.Host = host
				res, err := a.srv.Client().Do(hr)
				require.NoError(t, err)
				var p problemDoc
				require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
				res.Body.Close()
				require.Equal(t, http.StatusUnauthorized, res.StatusCode)
				require.Equal(t, base+"/problems/unauthorized", p.Type, "Host %s", host)

				hr, err = http.NewRequest(http.MethodGet, a.srv.URL+"/problems/conflict", nil)
				require.NoError(t, err)
				hr.Host, hr.Header["Accept"] = host, []string{"application/json"}
				res, err = a.srv.Client().Do(hr)
				require.NoError(t, err)
				var page struct{ Type string }
				require.NoError(t, json.NewDecoder(res.Body).Decode(&page))
				res.Body.Close()
				require.Equal(t, base+"/problems/conflict", page.Type, "Host %s", host)
			}
		})
	}
}

func TestBaseURLFromConfig(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.BaseURL = "https://api.example.test" }))
	p := requireProblem(t, a.get("/missing"), http.StatusNotFound, "not-found")
	require.Equal(t, "https://api.example.test/problems/not-found", p.Type)
}

func TestWrongMethodIs405WithAllow(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.do(req{Method: http.MethodPost, Path: "/health/live"})
	requireProblem(t, r, http.StatusMethodNotAllowed, "method-not-allowed")
	require.Equal(t, "GET, HEAD", r.Header.Get("Allow"))
}

func TestPanicIsOpaque500(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRoutes(func(e *gin.Engine) {
		e.GET("/test/panic", func(*gin.Context) { panic("secret internal state 42") })
	}))
	r := a.get("/test/panic", "X-Request-ID", "panic-req-1")
	p := requireProblem(t, r, http.StatusInternalServerError, "internal-error")
	require.Equal(t, "panic-req-1", p.RequestID)
	require.Contains(t, a.logs.String(), `"route":"/test/panic","path":"/test/panic","status":500`, "access log sees the 500")
	require.NotContains(t, string(r.Body), "secret internal state")
	require.NotContains(t, string(r.Body), "goroutine")
	logs := a.logs.String()
	require.Contains(t, logs, "secret internal state 42", "panic value logged")
	require.Contains(t, logs, "foundation_test.go", "stack logged")
	require.Contains(t, logs, `"request_id":"panic-req-1"`)
	// The server survives.
	require.Equal(t, http.StatusOK, a.get("/health/live").Status)
}

// Each failure is logged once at ERROR, with its cause and request id: a
// panic (its value and stack), an internal error over REST and over MCP.
// The access line of a 5xx is a WARN, and an unavailable database (a 503
// clients retry, not a fault) writes no ERROR at all.
func TestOneFailureOneErrorLine(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRoutes(func(e *gin.Engine) {
		e.GET("/test/panic", func(*gin.Context) { panic("the cause of the panic") })
	}))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	// byLevel splits a request's log lines into its ERROR lines and its
	// access line.
	byLevel := func(requestID string) (errs []map[string]any, access map[string]any) {
		t.Helper()
		for _, l := range a.logLines(requestID) {
			switch {
			case l["msg"] == "request":
				require.Nil(t, access, "one access line")
				access = l
			case l["level"] == "ERROR":
				errs = append(errs, l)
			}
		}
		require.NotNil(t, access, "the access line of %s", requestID)
		return errs, access
	}

	requireProblem(t, a.get("/test/panic", "X-Request-ID", "fail-panic"), http.StatusInternalServerError, "internal-error")
	errs, access := byLevel("fail-panic")
	require.Len(t, errs, 1, "%v", errs)
	require.Equal(t, "panic", errs[0]["msg"])
	require.Equal(t, "the cause of the panic", errs[0]["panic"])
	require.Contains(t, errs[0]["stack"], "foundation_test.go")
	require.Equal(t, "/test/panic", errs[0]["route"])
	require.Equal(t, "WARN", access["level"])
	require.EqualValues(t, http.StatusInternalServerError, access["status"])

	// A table gone from under the service: an opaque 500, whose cause is
	// the database's error.
	execSQL(t, a.cfg.DatabaseURL, `ALTER TABLE deliveries RENAME TO deliveries_elsewhere`)
	requireProblem(t, a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=10", "X-Request-ID", "fail-internal"),
		http.StatusInternalServerError, "internal-error")
	errs, access = byLevel("fail-internal")
	require.Len(t, errs, 1, "%v", errs)
	require.Equal(t, "internal error", errs[0]["msg"])
	require.Contains(t, errs[0]["error"], "deliveries")
	require.Equal(t, "WARN", access["level"])
	require.EqualValues(t, http.StatusInternalServerError, access["status"])

	// The same failure through a tool: a tool error naming the request id,
	// whose POST answered 200.
	text := a.mcpConnect(t, key, rev2026).toolErr("list_deliveries", map[string]any{"restaurantId": "r1", "from": "0", "to": "10"})
	m := regexp.MustCompile(`\(requestId ([^)]+)\)`).FindStringSubmatch(text)
	require.Len(t, m, 2, "the tool error names the request id: %s", text)
	errs, access = byLevel(m[1])
	require.Len(t, errs, 1, "%v", errs)
	require.Equal(t, "internal error", errs[0]["msg"])
	require.Equal(t, "/mcp list_deliveries", errs[0]["route"])
	require.Contains(t, errs[0]["error"], "deliveries")
	require.Equal(t, "INFO", access["level"])
	require.EqualValues(t, http.StatusOK, access["status"])
	require.Equal(t, 3, strings.Count(a.logs.String(), `"level":"ERROR"`), "three failures, three ERROR lines")

	unseen := a.newKey(grant("r1", "deliveries:read")) // not in the key cache: authenticating it queries
	a.svc.Store.Close()                                // every query is refused from now on
	requireProblem(t, a.getAs(unseen, "/v1/restaurants", "X-Request-ID", "fail-unavailable"),
		http.StatusServiceUnavailable, "dependency-unavailable")
	errs, access = byLevel("fail-unavailable")
	require.Empty(t, errs)
	require.Equal(t, "WARN", access["level"])
}

func TestMalformedQueryIs400(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, q := range []string{"a=%zz", "a=%", "x=1;y=2"} {
		r := a.get("/health/live?" + q)
		requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	a := newApp(t)

	t.Run("sane value is echoed", func(t *testing.T) {
		id := strings.Repeat("a", 199) + "~"
		r := a.get("/nope", "X-Request-ID", id)
		require.Equal(t, id, r.Header.Get("X-Request-ID"))
		require.Equal(t, id, r.problem(t).RequestID)
		ok := a.get("/health/live", "X-Request-ID", "abc-123")
		require.Equal(t, "abc-123", ok.Header.Get("X-Request-ID"), "echoed on success too")
	})
	for name, bad := range map[string]string{
		"too long":  strings.Repeat("a", 201),
		"space":     "two words",
		"non-ascii": "caf\u00e9",
		"tab":       "a\tb",
		"empty":     "",
	} {
		t.Run("insane value is replaced: "+name, func(t *testing.T) {
			r := a.get("/nope", "X-Request-ID", bad)
			got := r.Header.Get("X-Request-ID")
			require.NotEmpty(t, got)
			require.NotEqual(t, bad, got)
			require.Equal(t, got, r.problem(t).RequestID)
		})
	}
	t.Run("generated ids differ", func(t *testing.T) {
		require.NotEqual(t, a.get("/nope").Header.Get("X-Request-ID"), a.get("/nope").Header.Get("X-Request-ID"))
	})
}

// The access log has the route template and never the Authorization header
// or the query string.
func TestAccessLogOmitsSecrets(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.get("/health/live?signature=query-secret-value", "Authorization", "Bearer fsk_abcdefghijkl.header-secret-value", "X-Request-ID", "log-1")
	logs := a.logs.String()
	require.Contains(t, logs, `"route":"/health/live"`)
	require.Contains(t, logs, `"request_id":"log-1"`)
	require.Contains(t, logs, `"status":200`)
	require.Contains(t, logs, `"duration_ms"`)
	require.NotContains(t, logs, "header-secret-value")
	require.NotContains(t, logs, "query-secret-value")
}

// Cancelling the serve context (what SIGTERM does) lets an in-flight request
// finish, refuses new connections, then returns.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	cfg := testConfig(testdb.URL(t))
	cfg.ShutdownTimeout = 10 * time.Second
	svc, err := fsapp.New(context.Background(), cfg, slog.New(slog.DiscardHandler), fsapp.Options{})
	require.NoError(t, err)
	started, release, handled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	svc.Engine.GET("/test/slow", func(c *gin.Context) {
		close(started)
		<-release
		c.String(http.StatusOK, "finished")
		close(handled)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, nil) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		res, err := http.Get("http://" + addr + "/test/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- result{string(b), err}
	}()
	<-started
	cancel() // what SIGTERM does in `foodsafe serve`
	// The listener closes promptly; new connections are refused.
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return false
		}
		return true
	}, 5*time.Second, 20*time.Millisecond)
	close(release)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, "finished", r.body)
	require.NoError(t, <-served)
	// Serve returned after the handler did, never while it was in flight:
	// draining waits for the connection to go idle, so this holds by
	// ordering, not by timing.
	select {
	case <-handled:
	default:
		t.Fatal("Serve returned while a request was in flight")
	}
	// The app closed its pool after draining.
	require.Error(t, svc.Store.Ping(context.Background()))
}

// A request that outlives the drain timeout is cut off and Serve returns.
// (That draining waits for in-flight requests before the timeout is
// TestGracefulShutdownFinishesInFlight's part.)
func TestGracefulShutdownIsBounded(t *testing.T) {
	t.Parallel()
	h := gin.New()
	hanging := make(chan struct{})
	h.GET("/hang", func(c *gin.Context) {
		close(hanging)
		<-c.Request.Context().Done() // never finishes by itself
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, ln, h, server.Options{ShutdownTimeout: 200 * time.Millisecond}, slog.New(slog.DiscardHandler))
	}()
	go http.Get("http://" + ln.Addr().String() + "/hang") //nolint:errcheck // cut off by design
	<-hanging
	cancel()
	// The handler never returns on its own, so Serve returning at all is
	// the bound. The test's own limit is far above the drain timeout (a
	// loaded machine may be slow to schedule the close), far below the
	// suite's.
	const limit = time.Minute
	select {
	case err := <-served:
		require.NoError(t, err, "a forced close after the drain timeout is not an error")
	case <-time.After(limit):
		require.FailNowf(t, "shutdown hangs", "Serve still running %v after its context ended, with a drain timeout of 200ms", limit)
	}
}

// A database that cannot be reached is a retryable 503, never a 500.
func TestDatabaseUnavailableIs503(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	st, err := store.Open(context.Background(), "postgres://postgres@"+dead+"/x?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	defer st.Close()
	_, err = st.KeyForAuth(context.Background(), "aaaaaaaaaaaaaaaa")
	require.Error(t, err)
	require.True(t, apperr.Is(err, apperr.DependencyUnavailable), "%v", err)

	a := newApp(t, withDatabaseURL("postgres://postgres@"+dead+"/x?sslmode=disable&connect_timeout=1"))
	requireProblem(t, a.getAs("fsk_aaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "/v1/restaurants"),
		http.StatusServiceUnavailable, "dependency-unavailable")
}

// A client that goes away mid-request is recorded as 499, not as an
// internal error of the service.
func TestClientGoneIsNotAnInternalError(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rq := httptest.NewRequestWithContext(ctx, http.MethodGet, "/v1/restaurants/r1/deliveries?from=0&to=10", nil)
	rq.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	a.svc.Engine.ServeHTTP(rec, rq)
	require.Equal(t, 499, rec.Code)
	require.Empty(t, rec.Body.String())
	logs := a.logs.String()
	require.NotContains(t, logs, "internal error")
	require.Contains(t, logs, "client closed request")
	require.Contains(t, logs, `"status":499`)
}
