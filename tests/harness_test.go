// Package tests holds black-box tests: a real HTTP server (our own router on
// httptest) in front of a real, freshly migrated PostgreSQL database.
package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

func TestMain(m *testing.M) {
	setS3Environment()
	code := testdb.Main(m)
	stopSharedS3()
	removeCLI()
	os.Exit(code)
}

// logBuffer collects the service's JSON log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// app is one service instance under test.
type app struct {
	t    testing.TB
	cfg  config.Config
	svc  *fsapp.App
	srv  *httptest.Server
	logs *logBuffer
	// extraRoutes are paths a test registered itself: not in the contract.
	extraRoutes []string
	// remote, when set, is the base URL of a `foodsafe serve` process the
	// requests go to instead of srv (the same database): see replica.
	remote string
	// ops serves the operator endpoints (/metrics, pprof) on a listener of
	// their own, started on first use (see scrape).
	opsOnce sync.Once
	ops     *httptest.Server
}

// store is the instance's store, for arranging data and checking effects.
func (a *app) store() *store.Store { return a.svc.Store }

type appOption func(*appOptions)

type appOptions struct {
	cfg      func(*config.Config)
	dbURL    string
	preStart func(*gin.Engine)
	now      func() time.Time
	// s3, when set, keeps the app's files in a new bucket of this server.
	s3 *s3Server
}

// withClock replaces the service's clock.
func withClock(now func() time.Time) appOption { return func(o *appOptions) { o.now = now } }

// withConfig adjusts the configuration before the app is built.
func withConfig(f func(*config.Config)) appOption {
	return func(o *appOptions) { o.cfg = f }
}

// withDatabaseURL points the app at a given database instead of a fresh one.
func withDatabaseURL(u string) appOption { return func(o *appOptions) { o.dbURL = u } }

// withRoutes lets a test add routes (e.g. one that panics) before serving.
func withRoutes(f func(*gin.Engine)) appOption { return func(o *appOptions) { o.preStart = f } }

// testConfig is the configuration every test app starts from.
func testConfig(dbURL string) config.Config {
	cfg, err := config.Load()
	if err != nil {
		panic(err)
	}
	cfg.DatabaseURL = dbURL
	cfg.BaseURL = ""
	cfg.RedisURL = ""
	// Budgets large enough that only rate-limit tests meet them.
	cfg.RateLimit = 100000
	return cfg
}

func newApp(t testing.TB, opts ...appOption) *app {
	t.Helper()
	var o appOptions
	for _, f := range opts {
		f(&o)
	}
	if o.dbURL == "" {
		o.dbURL = testdb.URL(t)
	}
	cfg := testConfig(o.dbURL)
	cfg.BlobDir = t.TempDir()
	if o.s3 != nil {
		cfg.BlobURL = newBucket(t, o.s3)
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	logs := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := fsapp.New(context.Background(), cfg, log, fsapp.Options{Now: o.now})
	require.NoError(t, err)
	a := &app{t: t, cfg: cfg, svc: svc, logs: logs}
	if o.preStart != nil {
		before := map[string]bool{}
		for _, r := range svc.Engine.Routes() {
			before[r.Method+" "+r.Path] = true
		}
		o.preStart(svc.Engine)
		for _, r := range svc.Engine.Routes() {
			if !before[r.Method+" "+r.Path] {
				a.extraRoutes = append(a.extraRoutes, r.Path)
			}
		}
	}
	a.srv = httptest.NewServer(svc.Engine)
	t.Cleanup(func() {
		if a.ops != nil {
			a.ops.Close()
		}
		a.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Close(ctx) // idempotent: tests may have closed it already
	})
	return a
}

// response is a fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test on malformed JSON.
func (r response) JSON(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// problem decodes and sanity-checks a problem document.
func (r response) problem(t testing.TB) problemDoc {
	t.Helper()
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), "body: %s", r.Body)
	var p problemDoc
	r.JSON(t, &p)
	require.Equal(t, r.Status, p.Status, "status member matches the HTTP status")
	require.NotEmpty(t, p.Title)
	require.NotEmpty(t, p.Detail)
	require.NotEmpty(t, p.RequestID)
	require.Equal(t, r.Header.Get("X-Request-ID"), p.RequestID)
	return p
}

type problemDoc struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	RequestID string `json:"requestId"`
	Errors    []struct {
		Pointer   string `json:"pointer"`
		Parameter string `json:"parameter"`
		Detail    string `json:"detail"`
	} `json:"errors"`
}

// suffix is the problem type without its base URL.
func (p problemDoc) suffix() string {
	i := strings.LastIndex(p.Type, "/problems/")
	if i < 0 {
		return p.Type
	}
	return p.Type[i+len("/problems/"):]
}

// requireProblem asserts status and problem type suffix, returning the doc.
func requireProblem(t testing.TB, r response, status int, suffix string) problemDoc {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	p := r.problem(t)
	require.Equal(t, suffix, p.suffix(), "problem type; body: %s", r.Body)
	return p
}

// req describes one request.
type req struct {
	Method string
	Path   string
	Header map[string]string
	Body   io.Reader
	// Chunked sends the body without a Content-Length.
	Chunked bool
}

// do sends a request to the app, reads the whole response and holds the
// exchange to the OpenAPI document. It may be called from any goroutine
// (race tests send requests in parallel): a failure to send or read is
// reported with Errorf, never FailNow, and answers a zero response (status
// 0), which no assertion on the status accepts.
func (a *app) do(r req) response {
	a.t.Helper()
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	fail := func(what string, err error) response {
		a.t.Errorf("%s %s: %s: %v", r.Method, r.Path, what, err)
		return response{}
	}
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return fail("reading the request body", err)
		}
	}
	base, client := a.srv.URL, a.srv.Client()
	if a.remote != "" {
		base, client = a.remote, http.DefaultClient
	}
	hr, err := http.NewRequest(r.Method, base+r.Path, bytes.NewReader(body))
	if err != nil {
		return fail("building the request", err)
	}
	if r.Body == nil {
		hr.Body, hr.ContentLength = http.NoBody, 0
	}
	if r.Chunked {
		hr.Body, hr.ContentLength, hr.GetBody = io.NopCloser(bytes.NewReader(body)), -1, nil
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	res, err := client.Do(hr)
	if err != nil {
		return fail("sending", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return fail("reading the response", err)
	}
	out := response{Status: res.StatusCode, Header: res.Header, Body: b}
	a.checkContract(exchange{Method: r.Method, URL: r.Path, Header: hr.Header, Body: body,
		Status: out.Status, RHeader: out.Header, RBody: out.Body})
	return out
}

// get is do for a bodiless GET with optional headers as key, value pairs.
func (a *app) get(path string, kv ...string) response {
	a.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return a.do(req{Path: path, Header: h})
}

// concurrently runs f n times at once and returns every response.
func concurrently(n int, f func() response) []response {
	var wg sync.WaitGroup
	out := make([]response, n)
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = f()
		}()
	}
	wg.Wait()
	return out
}

// requireAppliedOnce asserts that all responses are 200 and exactly one is
// not an idempotent replay.
func requireAppliedOnce(t testing.TB, rs []response) {
	t.Helper()
	originals := 0
	for _, r := range rs {
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		if r.Header.Get("Idempotent-Replayed") == "" {
			originals++
		}
	}
	require.Equal(t, 1, originals)
}
