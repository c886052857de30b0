package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// framing tells, for each request of a connection in turn, whether it
// carried both Content-Length and Transfer-Encoding, wherever it stands
// among pipelined requests and whatever bodies come before it, and
// whatever the sizes of the reads.
func TestFraming(t *testing.T) {
	t.Parallel()
	const (
		get       = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
		both      = "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
		bothUpper = "POST /b HTTP/1.1\r\nTRANSFER-ENCODING: chunked\r\ncontent-length: 40\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-Trailer: y\r\n\r\n"
		withBody  = "PUT /c HTTP/1.1\r\nContent-Length: 36\r\n\r\nGET /fake HTTP/1.1\r\nHost: x\r\n\r\n\r\n\r\n"
		chunked   = "PUT /d HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\nPOST /e HTTP/1.1\r\nTransfe\r\n0\r\n\r\n"
	)
	long := "GET /" + strings.Repeat("p", 3*maxFieldKept) + " HTTP/1.1\r\nX-Long: " + strings.Repeat("v", 3*maxFieldKept) + "\r\n\r\n"
	for name, tc := range map[string]struct {
		stream string
		want   []bool
	}{
		"one request":                      {get, []bool{false}},
		"both framings first":              {both + get, []bool{true, false}},
		"both framings after a request":    {get + both, []bool{false, true}},
		"both framings third":              {get + get + bothUpper + get, []bool{false, false, true, false}},
		"after a body that looks like one": {withBody + both, []bool{false, true}},
		"after a chunked body":             {chunked + get + both, []bool{false, false, true}},
		"long lines":                       {long + both, []bool{false, true}},
		"a head not ended yet":             {get + "POST /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n", []bool{false}},
		// What net/http refuses closes the connection: nothing after it
		// is followed.
		"a malformed chunk":  {"PUT /d HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + both, []bool{false}},
		"an unreadable size": {"PUT /d HTTP/1.1\r\nContent-Length: -1\r\n\r\n" + both, nil},
	} {
		t.Run(name, func(t *testing.T) {
			for _, step := range []int{len(tc.stream), 1, 7, 100} {
				var f framing
				for in := tc.stream; in != ""; {
					n := min(step, len(in))
					f.feed([]byte(in[:n]))
					in = in[n:]
				}
				var got []bool
				for range len(tc.want) + 2 {
					got = append(got, f.next())
				}
				require.Equal(t, append(append([]bool{}, tc.want...), false, false), got, "reads of %d bytes", step)
				require.LessOrEqual(t, cap(f.line), maxFieldKept, "a line is kept up to maxFieldKept bytes")
			}
		})
	}
}

// Requests are popped as their handlers are entered, while more arrive:
// the queue stays in order and does not grow with the connection's age.
func TestFramingInterleaved(t *testing.T) {
	t.Parallel()
	var f framing
	const both = "POST /b HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	for i := range 10000 {
		f.feed([]byte("GET /a HTTP/1.1\r\n\r\n"))
		if i%3 == 0 {
			f.feed([]byte(both))
		}
		require.False(t, f.next(), "request %d", i)
		if i%3 == 0 {
			require.True(t, f.next(), "request %d", i)
		}
	}
	require.False(t, f.next())
	require.LessOrEqual(t, cap(f.pending), 16)
}
