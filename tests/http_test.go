package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// servedApp runs the service through app.Serve (the production server,
// timeouts and connection handling included) on a loopback port, and
// returns its address and its log.
func servedApp(t *testing.T, opts ...func(*config.Config)) (string, *logBuffer) {
	t.Helper()
	cfg := testConfig(testdb.URL(t))
	for _, o := range opts {
		o(&cfg)
	}
	logs := &logBuffer{}
	svc, err := fsapp.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)), fsapp.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String(), logs
}

// rawExchange writes raw bytes to the server and reads its one answer.
func rawExchange(t *testing.T, addr, request string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, request)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	return res
}

// Requests net/http answers by itself before any handler runs still get
// problem documents (spec 7: every failure is application/problem+json),
// with the client's X-Request-ID echoed where the bytes read hold a sane
// one (spec 4), the path as sent as instance, and an access log line
// under the id they carry.
func TestUnparseableRequestsGetProblems(t *testing.T) {
	t.Parallel()
	addr, logs := servedApp(t)
	big := strings.Repeat("a", 1<<20)
	for name, tc := range map[string]struct {
		request  string
		status   int
		suffix   string
		detail   string
		id       string // echoed; "" when a new one is expected
		instance string
	}{
		"header section over 64 KiB": {"GET /v1/restaurants HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-431\r\nX-Big: " + big + "\r\n\r\n",
			431, "request-header-fields-too-large", "64 KiB", "c-431", "/v1/restaurants"},
		"request line over 64 KiB": {"GET /v1/restaurants?" + strings.Repeat("a=1&", 20000) + " HTTP/1.1\r\nHost: x\r\nX-Request-ID: unread\r\n\r\n",
			431, "request-header-fields-too-large", "64 KiB", "", "/v1/restaurants"},
		"path over 8 KiB in a line over 64 KiB": {"GET /" + strings.Repeat("p", 70000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
			431, "request-header-fields-too-large", "instance holds the beginning of its path", "", "/" + strings.Repeat("p", 8<<10-5)},
		"malformed request line": {"GARBAGE\r\nX-Request-ID: c-garbage\r\n\r\n", 400, "invalid-request", "names no path", "c-garbage", ""},
		"not HTTP at all":        {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "invalid-request", "could not be parsed", "", ""},
		"missing Host":           {"GET /health/live HTTP/1.1\r\nX-Request-ID: c-host\r\n\r\n", 400, "invalid-request", "missing required Host header", "c-host", "/health/live"},
		"absolute form, path as sent": {"GET http://example.com/v1/a%20b/demo%2Fbistro?x=1 HTTP/1.1\r\nX-Request-ID: c-abs\r\n\r\n",
			400, "invalid-request", "missing required Host header", "c-abs", "/v1/a%20b/demo%2Fbistro"},
		"a path that is no URI": {"GET /v1/restaurants/%zz/deliveries HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-pct\r\n\r\n",
			400, "invalid-request", `invalid URL escape "%zz"`, "c-pct", "/v1/restaurants/%zz/deliveries"},
		"malformed header": {"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-hdr\r\nBad Header: y\r\n\r\n",
			400, "invalid-request", "invalid header name", "c-hdr", "/health/live"},
		"unknown transfer coding": {"POST /v1/mobile/sessions HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-501\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
			501, "not-implemented", "transfer coding", "c-501", "/v1/mobile/sessions"},
		"unknown HTTP version":     {"GET /x HTTP/9.9\r\nHost: x\r\nX-Request-ID: c-505\r\n\r\n", 505, "http-version-not-supported", "HTTP version", "c-505", "/x"},
		"HTTP/2 named in the line": {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http-version-not-supported", "HTTP version", "", "/"},
		"an unknown expectation": {"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Request-ID: c-417\r\nExpect: tea\r\n\r\n",
			417, "invalid-request", "100-continue", "c-417", "/health/live"},
		"an insane request id is replaced": {"GET /x HTTP/1.1\r\nX-Request-ID: has space\r\n\r\n", 400, "invalid-request", "Host", "", "/x"},
		"a key pasted in the path is redacted": {"GET /v1/fsk_aaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb HTTP/1.1\r\n\r\n",
			400, "invalid-request", "Host", "", "/v1/fsk_aaaaaaaaaaaaaaaa.[redacted]"},
		"a key with its dot escaped, in a path net/http refuses": {"GET /v1/fsk_aaaaaaaaaaaaaaaa%2Ebbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb%zz HTTP/1.1\r\nHost: x\r\n\r\n",
			400, "invalid-request", `invalid URL escape "%zz"`, "", "/v1/fsk_aaaaaaaaaaaaaaaa%2E[redacted]%zz"},
		"a request pipelined behind another": {"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nX-Request-ID: c-pipe\r\n\r\n",
			400, "invalid-request", "pipelined", "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, tc.request)
			require.NoError(t, err)
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			if strings.HasPrefix(name, "a request pipelined") {
				require.Equal(t, http.StatusOK, res.StatusCode, "the first request is served")
				_, _ = io.Copy(io.Discard, res.Body)
				res, err = http.ReadResponse(br, nil)
				require.NoError(t, err)
			}
			defer res.Body.Close()
			require.Equal(t, tc.status, res.StatusCode)
			require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
			require.True(t, res.Close, "the connection closes")
			var p problemDoc
			require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
			require.Equal(t, tc.status, p.Status)
			require.Equal(t, "/problems/"+tc.suffix, p.Type, "never the connection's address")
			require.Contains(t, p.Detail, tc.detail)
			require.Equal(t, tc.instance, p.Instance)
			require.NotEmpty(t, p.RequestID)
			require.Equal(t, p.RequestID, res.Header.Get("X-Request-ID"))
			if tc.id != "" {
				require.Equal(t, tc.id, p.RequestID, "the client's id is echoed")
			} else {
				require.Len(t, p.RequestID, 26, "a new id")
			}
			require.NotContains(t, string(mustJSON(t, p)), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
			line := logLine(t, logs, p.RequestID)
			require.Equal(t, float64(tc.status), line["status"])
			require.Equal(t, "(unparsed)", line["route"])
			require.Equal(t, tc.instance, line["path"])
		})
	}
	require.NotContains(t, logs.String(), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
}

// logLine is the one log line carrying request_id id.
func logLine(t *testing.T, logs *logBuffer, id string) map[string]any {
	t.Helper()
	var found []map[string]any
	for line := range strings.Lines(logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["request_id"] == id {
			found = append(found, m)
		}
	}
	require.Len(t, found, 1, "log lines under %s:\n%s", id, logs.String())
	return found[0]
}

// An HTTP/1.0 request without Host gets the same relative problem type as
// any other, never "http:///problems/...".
func TestProblemTypeWithoutHost(t *testing.T) {
	t.Parallel()
	addr, _ := servedApp(t)
	res := rawExchange(t, addr, "GET /nowhere HTTP/1.0\r\n\r\n")
	defer res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	var p problemDoc
	require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	require.Equal(t, "/problems/not-found", p.Type)
}

// HEAD is served wherever GET is (RFC 9110 9.1): same status and headers,
// no body, and listed in Allow. A read answered from data (a walk page,
// a record, a key's restaurants) is not built for a HEAD, so its HEAD has
// no Content-Length, as RFC 9110 9.3.2 allows; where one is sent it is
// the GET's.
func TestHeadWhereverGet(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read", "areas:write"))
	a.put(key, "r1", "areas", "a1", "m1", area("Kitchen"))
	for _, path := range []string{"/health/live", "/health/ready", "/health/version", "/openapi.json", "/v1/restaurants",
		recordsPath("r1", "areas"), recordsPath("r1", "areas") + "/a1", "/v1/restaurants/r1/collections"} {
		// A HEAD is never compressed (gzhttp: some proxies mishandle a
		// compressed HEAD), so both ask for the identity coding.
		get := a.getAs(key, path, "Accept-Encoding", "identity")
		head := a.do(req{Method: http.MethodHead, Path: path, Header: map[string]string{"Authorization": "Bearer " + key,
			"Accept-Encoding": "identity"}})
		require.Equal(t, get.Status, head.Status, path)
		require.Empty(t, head.Body, path)
		require.Equal(t, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"), path)
		if n := head.Header.Get("Content-Length"); n != "" || strings.HasPrefix(path, "/health/") {
			require.Equal(t, get.Header.Get("Content-Length"), n, path)
		}
	}
	// Access rules hold for HEAD as for GET.
	head := a.do(req{Method: http.MethodHead, Path: "/v1/restaurants"})
	require.Equal(t, http.StatusUnauthorized, head.Status)
	require.Empty(t, head.Body)
	r := a.do(req{Method: http.MethodDelete, Path: "/health/live"})
	requireProblem(t, r, http.StatusMethodNotAllowed, "method-not-allowed")
	require.Contains(t, r.Header.Get("Allow"), "HEAD")
	require.Contains(t, r.Header.Get("Allow"), "GET")
}

// Connections beyond FOODSAFE_MAX_CONNECTIONS are answered at once, with
// a 503 problem and Retry-After, and closed; once one closes, a new
// connection is served again.
func TestConnectionsOverTheCapAreRefused(t *testing.T) {
	t.Parallel()
	// One client, with the whole cap as its share: the cap is what is tried.
	addr, logs := servedApp(t, func(c *config.Config) { c.MaxConnections, c.ClientConnectionShare = 3, 100 })
	var held []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		// Served, and kept open (keep-alive): each holds its place.
		_, err = io.WriteString(conn, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		held = append(held, conn)
	}
	res := rawExchange(t, addr, "GET /health/live HTTP/1.1\r\nHost: x\r\nX-Request-ID: over-cap\r\n\r\n")
	defer res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	require.True(t, res.Close)
	var p problemDoc
	require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	require.Equal(t, "/problems/dependency-unavailable", p.Type)
	require.Contains(t, p.Detail, "FOODSAFE_MAX_CONNECTIONS")
	require.NotEqual(t, "over-cap", p.RequestID, "the request was not read")
	require.Equal(t, p.RequestID, res.Header.Get("X-Request-ID"))
	require.Equal(t, float64(503), logLine(t, logs, p.RequestID)["status"])

	require.NoError(t, held[0].Close())
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return false
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		return err == nil && res.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "a connection is served once one of the held ones closed")
}
