package tests

import (
	"bufio"
	"fmt"
	"io"
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

// Upload slots go to uploads that move. Four process slots are held by
// two keys whose uploads send a byte every 200 ms: with a minimum rate
// (FOODSAFE_UPLOAD_MIN_RATE after FOODSAFE_UPLOAD_RATE_GRACE, here short)
// the trickles are cut with a 408 and another device's upload then
// succeeds; with slots reserved for keys
// with no upload in progress (FOODSAFE_UPLOADS_RESERVED), the two keys
// never hold every slot and the other device's upload succeeds at once.
// Without either, the trickles hold the slots until the upload timeout
// (an hour here), and this test meets its own read deadline.
func TestTricklingUploadsFreeTheirSlots(t *testing.T) {
	t.Parallel()
	type trickle struct {
		conn net.Conn
		br   *bufio.Reader
	}
	setup := func(t *testing.T, cfg func(*config.Config)) (a *app, path func(key, id string) string, keys [3]string) {
		a = newApp(t, withConfig(func(c *config.Config) {
			c.UploadsMax, c.UploadsPerKey, c.UploadTimeout = 4, 4, time.Hour
			cfg(c)
		}))
		a.addRestaurants("r1")
		for i := range keys {
			keys[i] = a.newKey(grant("r1", "drive-files:write"))
		}
		path = func(key, id string) string {
			a.put(key, "r1", "drive-files", id, "m-"+id, map[string]any{"s3Key": "k", "name": id, "sizeBytes": 3,
				"asset": map[string]any{"objectKey": id, "status": "pending"}})
			return assetPath("r1", "drive-files", id, id)
		}
		return a, path, keys
	}
	// start opens an upload and, once it holds a slot, sends it a byte
	// every 200 ms until the server answers or the test ends; a refusal
	// comes back as the answer.
	start := func(t *testing.T, base, key, path string) (*trickle, response) {
		res, conn, br := openUpload(t, base, key, path)
		if res.StatusCode != http.StatusContinue {
			return nil, bodyOf(t, res)
		}
		// Bounds the test, not the server: without a minimum rate the
		// trickle is cut only after the upload timeout.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(60*time.Second)))
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := io.WriteString(conn, "1\r\np\r\n"); err != nil {
						return
					}
				}
			}
		}()
		return &trickle{conn, br}, response{}
	}
	pdf := []byte("pdf")

	t.Run("the minimum rate cuts the trickles", func(t *testing.T) {
		t.Parallel()
		a, path, k := setup(t, func(c *config.Config) {
			c.UploadsReserved, c.UploadRateGrace, c.UploadMinRate = 0, 500*time.Millisecond, 100
		})
		trickling := []string{k[0], k[0], k[1], k[1]}
		paths := make([]string, len(trickling))
		for i, key := range trickling {
			paths[i] = path(key, fmt.Sprintf("t%d", i))
		}
		other := path(k[2], "other")
		var held []*trickle
		for i, key := range trickling {
			tr, refused := start(t, a.srv.URL, key, paths[i])
			require.NotNil(t, tr, "upload %d holds a slot: %d %s", i, refused.Status, refused.Body)
			held = append(held, tr)
		}
		// Whether the other upload is refused now depends on how fast
		// these lines ran against the grace: it is not asserted.
		for _, tr := range held {
			res, err := http.ReadResponse(tr.br, nil)
			require.NoError(t, err, "the trickle is cut and told why")
			p := requireProblem(t, bodyOf(t, res), http.StatusRequestTimeout, "upload-too-slow")
			require.Contains(t, p.Detail, "slower than 100 bytes a second after the first 500ms")
			require.True(t, res.Close, "the connection is closed after the cut")
		}
		r := a.uploadChunked(k[2], other, "application/pdf", digestHeader(pdf), pdf)
		require.Equal(t, http.StatusOK, r.Status, "the slots are free again: %s", r.Body)
		require.NotContains(t, a.logs.String(), `"status":500`)
	})

	t.Run("two keys cannot hold every slot", func(t *testing.T) {
		t.Parallel()
		a, path, k := setup(t, func(c *config.Config) {
			c.UploadsReserved, c.UploadRateGrace = 50, time.Hour
		})
		held := map[string]int{}
		for _, key := range k[:2] {
			for i := range 4 {
				tr, refused := start(t, a.srv.URL, key, path(key, fmt.Sprintf("%s-%d", publicID(t, key), i)))
				if tr == nil {
					p := requireProblem(t, refused, http.StatusTooManyRequests, "rate-limit-exceeded")
					require.Contains(t, p.Detail, "keeps its last 2 upload slots for keys with none")
					require.NotEmpty(t, refused.Header.Get("Retry-After"))
					break
				}
				held[key]++
			}
		}
		require.Equal(t, map[string]int{k[0]: 2, k[1]: 1}, held,
			"the first key fills the slots beyond the reserve, the second takes one of the reserve")
		r := a.uploadChunked(k[2], path(k[2], "other"), "application/pdf", digestHeader(pdf), pdf)
		require.Equal(t, http.StatusOK, r.Status, "another device's upload takes the last slot: %s", r.Body)
		require.NotContains(t, a.logs.String(), `"status":500`)
	})
}
