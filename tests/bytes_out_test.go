package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileFile is 1 MiB of blocks that each begin like net/http's own
// plain-text error answer, one every 512 bytes (so any write of a
// download starts on one), ending in a whole HTTP response: what a key
// that may upload files could store to have a rewriting layer corrupt
// other clients' downloads or answer their next request.
func hostileFile() []byte {
	const canned = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	block := canned + strings.Repeat(".", 512-len(canned))
	tail := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"status\":\"evil\"}"
	return []byte(strings.Repeat(block, (1<<20)/512-1) + tail + strings.Repeat("\r\n", (512-len(tail))/2))
}

// Bytes out are the bytes stored: the hostile file downloads byte for
// byte through the production server (Go's client and curl) or from the
// object store, and the next request on the same keep-alive connection
// gets the service's own answer.
func TestDownloadsAreTheBytesStored(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testDownloadsAreTheBytesStored)
}

func testDownloadsAreTheBytesStored(t *testing.T, b backend) {
	a := b.newApp(t)
	base := a.served()
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	file := hostileFile()
	require.Len(t, file, 1<<20)
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "blocks.bin", "sizeBytes": len(file),
		"asset": map[string]any{"objectKey": "blocks.bin", "status": "pending"}})
	r := a.upload(key, assetPath("r1", "drive-files", "f1", "blocks.bin"), "application/octet-stream", digestHeader(file), file)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	u := a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL

	// Go's client, one connection for both requests.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	defer client.CloseIdleConnections()
	get := func(rawURL string) (response, bool) {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, rawURL, nil)
		require.NoError(t, err)
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return response{Status: res.StatusCode, Header: res.Header, Body: body}, reused
	}
	got, _ := get(u)
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, "1048576", got.Header.Get("Content-Length"))
	require.True(t, bytes.Equal(file, got.Body), "the download is the file, byte for byte (%d bytes back)", len(got.Body))
	if !b.s3 {
		next, reused := get(base + "/health/live")
		require.True(t, reused, "the same keep-alive connection")
		require.Equal(t, http.StatusOK, next.Status)
		require.JSONEq(t, `{"status":"ok"}`, string(next.Body))
	}

	// curl: the download and a second request on its connection.
	curl, err := exec.LookPath("curl")
	require.NoError(t, err, "this test downloads with curl too: install it")
	dir := t.TempDir()
	second := base + "/health/live"
	if b.s3 {
		second = u
	}
	out, err := exec.Command(curl, "-sS", "--no-progress-meter", "-w", "%{http_code} %{num_connects}\n",
		"-o", filepath.Join(dir, "1"), u, "-o", filepath.Join(dir, "2"), second).CombinedOutput()
	require.NoError(t, err, "%s", out)
	if b.s3 {
		require.Regexp(t, `^200 1\n200 [01]\n$`, string(out)) // the store's connections are its own business
	} else {
		require.Equal(t, "200 1\n200 0\n", string(out), "two answers, one connection")
	}
	one, err := os.ReadFile(filepath.Join(dir, "1"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(file, one), "curl's download is the file, byte for byte (%d bytes back)", len(one))
	two, err := os.ReadFile(filepath.Join(dir, "2"))
	require.NoError(t, err)
	if b.s3 {
		require.True(t, bytes.Equal(file, two))
	} else {
		require.JSONEq(t, `{"status":"ok"}`, string(two))
	}
}

// Ranges never make an answer much larger than the file: 299 one-byte
// ranges of a 600-byte file, or ranges whose part headers outweigh the
// file, answer at most the file (coalesced into one range, or the whole
// file) on our route; the object store answers at most the file too.
func TestRangesNeverAmplify(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t)
		a.addRestaurants("r1")
		key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
		file := []byte(strings.Repeat("0123456789", 60))
		a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n.txt", "sizeBytes": len(file),
			"asset": map[string]any{"objectKey": "n.txt", "status": "pending"}})
		require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "n.txt"), "text/plain", digestHeader(file), file).Status)
		u := a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL
		var every []string
		for i := 0; i < 598; i += 2 {
			every = append(every, fmt.Sprintf("%d-%d", i, i))
		}
		for _, rng := range []string{"bytes=" + strings.Join(every, ","), "bytes=0-0,300-300,599-599", "bytes=0-599,0-599,0-599,0-599"} {
			r := a.download(u, "Range", rng)
			require.Contains(t, []int{http.StatusOK, http.StatusPartialContent}, r.Status, "%.60s: %s", rng, r.Body)
			require.LessOrEqual(t, len(r.Body), len(file), "%.60s answers %d bytes", rng, len(r.Body))
			if !a.onS3() {
				ct := r.Header.Get("Content-Type")
				require.False(t, strings.HasPrefix(ct, "multipart/"), "%.60s: %s", rng, ct)
				if r.Status == http.StatusOK {
					require.Equal(t, file, r.Body)
				} else {
					var first, last int
					_, err := fmt.Sscanf(r.Header.Get("Content-Range"), "bytes %d-%d/600", &first, &last)
					require.NoError(t, err)
					require.Equal(t, file[first:last+1], r.Body)
				}
			}
		}
		// Two parts far apart of a larger file are still a multipart answer.
		big := []byte(strings.Repeat("abcdefghij", 1000))
		a.put(key, "r1", "drive-files", "f2", "m2", map[string]any{"s3Key": "k", "name": "big.txt", "sizeBytes": len(big),
			"asset": map[string]any{"objectKey": "big.txt", "status": "pending"}})
		require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f2", "big.txt"), "text/plain", digestHeader(big), big).Status)
		if !a.onS3() {
			u := a.fileList(key, assetsPath("r1", "drive-files", "f2"))[0].URL
			r := a.download(u, "Range", "bytes=9000-9004,0-4")
			require.Equal(t, http.StatusPartialContent, r.Status)
			require.True(t, strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/byteranges"))
			require.Contains(t, string(r.Body), "Content-Range: bytes 0-4/10000\r\n")
			require.Contains(t, string(r.Body), "Content-Range: bytes 9000-9004/10000\r\n")
		}
	})
}
