package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The scanner reads the same head whatever the reads' sizes: whole, a
// byte at a time, or cut in the middle of a line.
func TestHeadScanner(t *testing.T) {
	t.Parallel()
	long := "/" + strings.Repeat("p", maxLineKept)
	for name, tc := range map[string]struct {
		in   string
		want RequestHead
	}{
		"a request": {"GET /v1/a%20b?x=1 HTTP/1.1\r\nHost: h\r\nx-request-id:  abc \r\n\r\nbody: X-Request-ID: no\r\n",
			RequestHead{Seen: true, Line: true, Method: "GET", Target: "/v1/a%20b?x=1", RequestID: "abc"}},
		"the first request id counts": {"GET / HTTP/1.1\r\nX-Request-Id: one\r\nX-Request-ID: two\r\n\r\n",
			RequestHead{Seen: true, Line: true, Method: "GET", Target: "/", RequestID: "one"}},
		"both framings": {"POST /x HTTP/1.1\r\ncontent-length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
			RequestHead{Seen: true, Line: true, Method: "POST", Target: "/x", ContentLength: true, TransferEncoding: true}},
		"no end yet": {"GET /x HTTP/1.1\r\nX-Request-ID: id",
			RequestHead{Seen: true, Line: true, Method: "GET", Target: "/x"}},
		"a request line cut short": {"GET /v1/restaurants?" + strings.Repeat("a=1&", 100),
			RequestHead{Seen: true, Line: true, Truncated: true, Method: "GET", Target: "/v1/restaurants?" + strings.Repeat("a=1&", 100)}},
		"a request line over the kept length": {"GET " + long + " HTTP/1.1\r\nX-Request-ID: after\r\n\r\n",
			RequestHead{Seen: true, Line: true, Truncated: true, Method: "GET", Target: long[:maxLineKept-len("GET ")], RequestID: "after"}},
		"garbage": {"GARBAGE\r\n\r\n", RequestHead{Seen: true, Line: true, Method: "GARBAGE"}},
		"nothing": {"", RequestHead{}},
		"a long request id is cut": {"GET / HTTP/1.1\r\nX-Request-ID: " + strings.Repeat("i", 500) + "\r\n\r\n",
			RequestHead{Seen: true, Line: true, Method: "GET", Target: "/", RequestID: strings.Repeat("i", maxIDKept)}},
	} {
		t.Run(name, func(t *testing.T) {
			for _, step := range []int{len(tc.in) + 1, 1, 7} {
				var s headScanner
				for in := tc.in; in != ""; {
					n := min(step, len(in))
					s.feed([]byte(in[:n]))
					in = in[n:]
				}
				require.Equal(t, tc.want, s.snapshot(), "reads of %d bytes", step)
			}
		})
	}
}

// After reset, the next request's head is read from scratch.
func TestHeadScannerReset(t *testing.T) {
	t.Parallel()
	var s headScanner
	s.feed([]byte("PUT /a HTTP/1.1\r\nX-Request-ID: first\r\nContent-Length: 1\r\n\r\nx"))
	s.reset()
	require.Equal(t, RequestHead{}, s.snapshot())
	s.feed([]byte("GET /b HTTP/1.1\r\n\r\n"))
	require.Equal(t, RequestHead{Seen: true, Line: true, Method: "GET", Target: "/b"}, s.snapshot())
}

func TestParseCanned(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]struct {
		status int
		text   string
		ok     bool
	}{
		"HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain\r\n\r\n400": {400, "missing required Host header", true},
		"HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n":                                          {431, "", true},
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\n\r\n":                                  {417, "", true},
		"HTTP/1.1 200 OK\r\n\r\n":    {},
		"HTTP/2 400 Bad\r\n\r\n":     {},
		"HTTP/1.1 4x0 Bad\r\n\r\n":   {},
		"body bytes of a file":       {},
		"HTTP/1.1 40":                {},
		"HTTP/1.0 505 Nope\r\n\r\n":  {505, "", true},
		"HTTP/1.1 600 Weird\r\n\r\n": {},
	} {
		status, text, ok := parseCanned([]byte(in))
		require.Equal(t, want.ok, ok, "%q", in)
		require.Equal(t, want.status, status, "%q", in)
		require.Equal(t, want.text, text, "%q", in)
	}
}

// A request that began in the bytes read with the previous one (which
// declared no body) is not followed from its middle: nothing is known of
// it. After a request with a body, what follows its head is the body.
func TestHeadScannerPipelined(t *testing.T) {
	t.Parallel()
	var s headScanner
	s.feed([]byte("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HT"))
	s.reset()
	s.feed([]byte("TP/1.1\r\nX-Request-ID: x\r\n\r\n"))
	require.Equal(t, RequestHead{}, s.snapshot(), "the middle of a pipelined request")
	s.reset()
	s.feed([]byte("GET /c HTTP/1.1\r\n\r\n"))
	require.Equal(t, RequestHead{Seen: true, Line: true, Method: "GET", Target: "/c"}, s.snapshot(), "the next one is read again")

	s.reset()
	s.feed([]byte("PUT /d HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"))
	s.reset()
	s.feed([]byte("GET /e HTTP/1.1\r\n\r\n"))
	require.Equal(t, RequestHead{Seen: true, Line: true, Method: "GET", Target: "/e"}, s.snapshot(), "a body is not a request")
}
