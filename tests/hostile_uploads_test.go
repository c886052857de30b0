package tests

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// An upload refused before its body is read (no slot, no such record) is
// answered at once and its connection closed, even when the client sent no
// Expect: 100-continue and stalls after a few bytes: the server does not
// wait to read the rest of a body it will not use.
func TestStalledUploadRefusedAtOnce(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey, c.UploadTimeout = 1, time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write"))
	for _, id := range []string{"f1", "f2"} {
		a.put(key, "r1", "drive-files", id, "m-"+id, map[string]any{"s3Key": "k", "name": id, "sizeBytes": 1,
			"asset": map[string]any{"objectKey": id, "status": "pending"}})
	}
	held, _, _ := openUpload(t, a.srv.URL, key, assetPath("r1", "drive-files", "f1", "f1"))
	require.Equal(t, http.StatusContinue, held.StatusCode, "the first upload holds the key's one slot")

	stalled := func(path string) *http.Response {
		u, err := url.Parse(a.srv.URL)
		require.NoError(t, err)
		conn, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		// Bounds the test, not the server: without the fix the answer
		// waits for the upload timeout (an hour here).
		require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
		_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/pdf\r\n"+
			"Repr-Digest: %s\r\nTransfer-Encoding: chunked\r\n\r\n1\r\np\r\n", path, u.Host, key, digestHeader([]byte("pdf")))
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "the refusal arrives while the client still stalls")
		return res
	}
	res := stalled(assetPath("r1", "drive-files", "f2", "f2"))
	r := bodyOf(t, res)
	requireProblem(t, r, http.StatusTooManyRequests, "rate-limit-exceeded")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.True(t, res.Close, "the connection is closed after the refusal")

	res = stalled(assetPath("r1", "drive-files", "nope", "nope"))
	requireProblem(t, bodyOf(t, res), http.StatusNotFound, "not-found")
	require.True(t, res.Close)
	require.NotContains(t, a.logs.String(), `"status":500`)
}
