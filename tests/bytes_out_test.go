package tests

import (
	"bytes"
	"context"
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
