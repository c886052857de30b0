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

	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// servedApp runs the service through app.Serve (the production server,
// timeouts and connection handling included) on a loopback port.
func servedApp(t *testing.T) string {
	t.Helper()
	svc, err := fsapp.New(context.Background(), testConfig(testdb.URL(t)), slog.New(slog.DiscardHandler), fsapp.Options{})
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
	return ln.Addr().String()
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
// problem documents (spec 7: every failure is application/problem+json).
func TestUnparseableRequestsGetProblems(t *testing.T) {
	t.Parallel()
	addr := servedApp(t)
	for name, tc := range map[string]struct {
		request string
		status  int
		suffix  string
		detail  string
	}{
		"header section over 64 KiB": {"GET /v1/restaurants HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n",
			431, "request-header-fields-too-large", "64 KiB"},
		"request line over 64 KiB": {"GET /v1/restaurants?" + strings.Repeat("a=1&", 20000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
			431, "request-header-fields-too-large", "64 KiB"},
		"malformed request line": {"GARBAGE\r\n\r\n", 400, "invalid-request", "could not be parsed"},
		"missing Host":           {"GET /health/live HTTP/1.1\r\n\r\n", 400, "invalid-request", "missing required Host header"},
		"malformed header":       {"GET /health/live HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400, "invalid-request", "invalid header name"},
		"unknown transfer coding": {"POST /v1/mobile/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
			501, "not-implemented", "transfer coding"},
		"unknown HTTP version":     {"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505, "http-version-not-supported", "HTTP version"},
		"HTTP/2 named in the line": {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http-version-not-supported", "HTTP version"},
	} {
		t.Run(name, func(t *testing.T) {
			res := rawExchange(t, addr, tc.request)
			defer res.Body.Close()
			require.Equal(t, tc.status, res.StatusCode)
			require.Equal(t, "application/problem+json", res.Header.Get("Content-Type"))
			var p problemDoc
			require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
			require.Equal(t, tc.status, p.Status)
			require.Equal(t, "/problems/"+tc.suffix, p.Type, "never the connection's address")
			require.Contains(t, p.Detail, tc.detail)
			require.NotEmpty(t, p.RequestID)
		})
	}
}

// An HTTP/1.0 request without Host gets the same relative problem type as
// any other, never "http:///problems/...".
func TestProblemTypeWithoutHost(t *testing.T) {
	t.Parallel()
	addr := servedApp(t)
	res := rawExchange(t, addr, "GET /nowhere HTTP/1.0\r\n\r\n")
	defer res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	var p problemDoc
	require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
	require.Equal(t, "/problems/not-found", p.Type)
}

// HEAD is served wherever GET is (RFC 9110 9.1): same status and headers,
// no body, and listed in Allow.
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
		require.Equal(t, get.Header.Get("Content-Length"), head.Header.Get("Content-Length"), path)
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
