package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// Requests refused in middleware (an unknown key here) whose bodies are
// still arriving are answered at once and their connections closed: 50
// slow bodies (a declared length under net/http's 256 KiB read-ahead, one
// over it, and chunked) are each refused within 3 s, while the server's
// read timeout is an hour and no body ever completes.
func TestSlowBodiesAreRefusedAtOnce(t *testing.T) {
	t.Parallel()
	addr, _ := servedApp(t, func(c *config.Config) { c.ReadTimeout = time.Hour })
	path := "/v1/ingest/restaurants/r1/collections/areas/records/a1/mutations/m1"
	framings := []string{"Content-Length: 100000", "Content-Length: 10000000", "Transfer-Encoding: chunked"}
	type slow struct {
		conn net.Conn
		br   *bufio.Reader
	}
	var conns []slow
	for i := range 50 {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		body := `{"id":"a1",`
		if strings.HasPrefix(framings[i%3], "Transfer") {
			body = fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
		}
		_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fsk_%016d.%s\r\n"+
			"Content-Type: application/json\r\nIdempotency-Key: m1\r\n%s\r\n\r\n%s", path, i, strings.Repeat("s", 43), framings[i%3], body)
		require.NoError(t, err)
		conns = append(conns, slow{conn, bufio.NewReader(conn)})
	}
	deadline := time.Now().Add(3 * time.Second)
	for i, s := range conns {
		require.NoError(t, s.conn.SetReadDeadline(deadline))
		res, err := http.ReadResponse(s.br, nil)
		require.NoError(t, err, "connection %d (%s) is answered while its body is still arriving", i, framings[i%3])
		var p problemDoc
		require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.True(t, res.Close, "the answer says the connection closes")
		_, err = s.br.ReadByte()
		require.Error(t, err)
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection %d (%s) is closed, not left open", i, framings[i%3])
	}
}

// A request with both Content-Length and Transfer-Encoding is answered
// 400 and its connection closed (RFC 9112 6.3), wherever it stands among
// requests pipelined on the connection (read with the ones before it,
// while they are in their handlers): what follows on the connection is
// never read as a request.
func TestContentLengthWithTransferEncodingIsRefused(t *testing.T) {
	t.Parallel()
	addr, _ := servedApp(t)
	const (
		smuggle = "POST /v1/mobile/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n" +
			"X-Request-ID: smuggle\r\n\r\n0\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
		live = "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n"
		// A body that reads like a request with both framings: it is a
		// body, and the request after it is the one refused.
		withBody = "GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Length: 67\r\n\r\n" +
			"POST /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
	)
	for name, tc := range map[string]struct {
		before []int // the statuses of the requests before it
		stream string
	}{
		"first":                        {nil, smuggle},
		"after a request":              {[]int{200}, live + smuggle},
		"third":                        {[]int{200, 200}, live + live + smuggle},
		"after a body that looks like": {[]int{200}, withBody + smuggle},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = io.WriteString(conn, tc.stream) // in one write: read together
			require.NoError(t, err)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			br := bufio.NewReader(conn)
			for _, status := range tc.before {
				res, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, res.Body)
				require.Equal(t, status, res.StatusCode)
				require.False(t, res.Close)
			}
			res, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, res.StatusCode)
			require.True(t, res.Close)
			var p problemDoc
			require.NoError(t, json.NewDecoder(res.Body).Decode(&p))
			require.Equal(t, "/problems/invalid-request", p.Type)
			require.Contains(t, p.Detail, "both Content-Length and Transfer-Encoding")
			require.Equal(t, "smuggle", p.RequestID)
			_, err = http.ReadResponse(br, nil)
			require.Error(t, err, "nothing more is answered on the connection")
			require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the connection is closed")
		})
	}
}

// The connection timeouts are the server's: a connection left idle after
// a request is closed at FOODSAFE_IDLE_TIMEOUT, and one whose headers do
// not arrive within FOODSAFE_READ_HEADER_TIMEOUT is cut, answered or not.
func TestIdleAndSlowHeaderConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	addr, _ := servedApp(t, func(c *config.Config) {
		c.IdleTimeout, c.ReadHeaderTimeout, c.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond, time.Hour
	})
	idle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer idle.Close()
	_, err = io.WriteString(idle, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(idle)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, idle.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed by the server")

	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	_, err = io.WriteString(slow, "GET /health/live HTTP/1.1\r\nHost: x\r\n") // and never the blank line
	require.NoError(t, err)
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadAll(slow)
	require.NoError(t, err, "the server closes the connection")
}

// dialFrom opens a connection to addr from the loopback address from
// (127.0.0.0/8 is all loopback), so one test can be several clients.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	conn, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// liveOn sends GET /health/live on conn and reads the answer, leaving the
// connection open (keep-alive) when the server does.
func liveOn(t *testing.T, conn net.Conn) *http.Response {
	t.Helper()
	_, err := io.WriteString(conn, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body = io.NopCloser(strings.NewReader(string(body)))
	return res
}

// One address cannot hold every connection: with FOODSAFE_MAX_CONNECTIONS
// at 200, 200 connections from one address (each a GET /health/live,
// then kept open, as an attacker's idle keep-alives are) hold only their
// share (FOODSAFE_CLIENT_CONNECTION_SHARE, 10%: 20); the others are
// refused with a 503 that names the setting, and a GET /health/live from
// another address is answered. A trusted proxy's connections carry many
// clients and have no share.
func TestOneAddressCannotHoldEveryConnection(t *testing.T) {
	t.Parallel()
	addr, _ := servedApp(t, func(c *config.Config) {
		c.MaxConnections = 200
		require.NoError(t, c.TrustedProxies.UnmarshalText([]byte("127.0.0.3")))
	})
	statuses := map[int]int{}
	var refusal problemDoc
	for range 200 {
		res := liveOn(t, dialFrom(t, "127.0.0.1", addr))
		statuses[res.StatusCode]++
		if res.StatusCode == http.StatusServiceUnavailable {
			require.True(t, res.Close)
			require.Equal(t, "1", res.Header.Get("Retry-After"))
			require.NoError(t, json.NewDecoder(res.Body).Decode(&refusal))
		}
	}
	t.Logf("200 connections from one address: %v", statuses)
	require.Equal(t, map[int]int{http.StatusOK: 20, http.StatusServiceUnavailable: 180}, statuses)
	require.Equal(t, "/problems/dependency-unavailable", refusal.Type)
	require.Contains(t, refusal.Detail, "FOODSAFE_CLIENT_CONNECTION_SHARE")

	require.Equal(t, http.StatusOK, liveOn(t, dialFrom(t, "127.0.0.2", addr)).StatusCode, "another address is served")
	for i := range 30 {
		require.Equal(t, http.StatusOK, liveOn(t, dialFrom(t, "127.0.0.3", addr)).StatusCode, "the proxy's connection %d", i)
	}
}

// A body refused before it is read still gets its answer to a client
// that sends the whole body before reading (Python's http.client): the
// connection is half-closed after the 413 and what the client still
// sends is read and discarded, instead of a close that resets the
// connection under the answer. 10 tries of 10 read it.
func TestRefusedBodyReachesAClientSendingItWhole(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is not installed: CI runs this test")
		}
		t.Skip("skipped: python3 is not installed (CI runs this test; set CI to make this a failure)")
	}
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write"))
	base := a.served()
	out, err := exec.Command(python, "testdata/body_first.py", base+ingestPath("r1", "areas", "a1", "m1"), key,
		strconv.Itoa(2<<20), "10").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("a 2 MiB body sent whole, 10 times:\n%s", out)
	require.Equal(t, strings.Repeat("413 /problems/payload-too-large\n", 10), string(out))
}

// OPTIONS * (the server's no-op) is a request like any other: answered
// 200 with no body as before, but logged, counted against the client's
// budget (429 once it is spent) and audited by shape.
func TestOptionsAsteriskIsARequestLikeAnyOther(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.RateLimit, c.AuditFlushInterval = 3, time.Hour }))
	addr := strings.TrimPrefix(a.served(), "http://")
	statuses := []int{}
	for i := range 4 {
		res := rawExchange(t, addr, fmt.Sprintf("OPTIONS * HTTP/1.1\r\nHost: x\r\nX-Request-ID: options-%d\r\n\r\n", i))
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		if res.StatusCode == http.StatusOK {
			require.Empty(t, body)
		}
		statuses = append(statuses, res.StatusCode)
	}
	require.Equal(t, []int{200, 200, 200, 429}, statuses)
	line := logLine(t, a.logs, "options-0")
	require.Equal(t, "OPTIONS", line["method"])
	require.Equal(t, "*", line["path"])
	require.Equal(t, float64(429), logLine(t, a.logs, "options-3")["status"])
	var audited int64
	for _, c := range flushedCounts(t, a) {
		if c.Method == http.MethodOptions {
			audited += c.Requests
		}
	}
	require.Equal(t, int64(4), audited)
}
