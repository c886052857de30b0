package tests

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// rawResponse is an answer as it came off the wire: not decompressed.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// rawGet sends a GET with exactly the Accept-Encoding given (so Go's
// transport neither asks for gzip nor decompresses) and headers kv.
func (a *app) rawGet(path, acceptEncoding string, kv ...string) rawResponse {
	a.t.Helper()
	r, err := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
	require.NoError(a.t, err)
	r.Header.Set("Accept-Encoding", acceptEncoding)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	res, err := a.srv.Client().Do(r)
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	require.False(a.t, res.Uncompressed, "the transport must not decompress")
	return rawResponse{Status: res.StatusCode, Header: res.Header, Body: b}
}

// decoded is the body decompressed by the coding its Content-Encoding
// names.
func (r rawResponse) decoded(t testing.TB) []byte {
	t.Helper()
	switch r.Header.Get("Content-Encoding") {
	case "":
		return r.Body
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(r.Body))
		require.NoError(t, err)
		b, err := io.ReadAll(zr)
		require.NoError(t, err)
		return b
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(r.Body))
		require.NoError(t, err)
		defer zr.Close()
		b, err := io.ReadAll(zr)
		require.NoError(t, err)
		return b
	}
	require.Failf(t, "unknown coding", "%q", r.Header.Get("Content-Encoding"))
	return nil
}

// Answers are compressed when the client accepts it: zstd or gzip by the
// client's weights (zstd at equal weight), the bytes those of the
// uncompressed answer, declared by Content-Encoding, with Vary:
// Accept-Encoding and a Content-Length, when there is one, of the bytes
// sent. Below the
// threshold, for a HEAD, and for any coding the client refuses or the
// service does not offer, the answer is as it was. A file download is
// never compressed, whatever its type, whole or ranged.
func TestCompressedAnswers(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read", "areas:write", "drive-files:read", "drive-files:write"))
	auth := "Bearer " + key
	for i := range 100 {
		a.put(key, "r1", "areas", fmt.Sprintf("area-%03d", i), fmt.Sprintf("m-%03d", i), area(fmt.Sprintf("Area %d", i)))
	}
	page := recordsPath("r1", "areas") + "?limit=100"
	identity := a.getAs(key, page, "Accept-Encoding", "identity")
	require.Equal(t, http.StatusOK, identity.Status)
	require.Empty(t, identity.Header.Get("Content-Encoding"))
	require.Greater(t, len(identity.Body), 10_000)

	t.Run("codings by the client's weights", func(t *testing.T) {
		for _, c := range []struct{ accept, coding string }{
			{"gzip", "gzip"},
			{"zstd", "zstd"},
			{"gzip, deflate, br, zstd", "zstd"},
			{"zstd;q=0.5, gzip", "gzip"},
			{"gzip;q=0.2, zstd;q=0.9", "zstd"},
			{"*", ""},
			{"br, deflate", ""},
			{"gzip;q=0, zstd;q=0", ""},
			{"identity", ""},
		} {
			r := a.rawGet(page, c.accept, "Authorization", auth)
			require.Equal(t, http.StatusOK, r.Status, c.accept)
			require.Equal(t, c.coding, r.Header.Get("Content-Encoding"), c.accept)
			require.Contains(t, r.Header.Values("Vary"), "Accept-Encoding", c.accept)
			require.Equal(t, string(identity.Body), string(r.decoded(t)), c.accept)
			if c.coding != "" {
				require.Less(t, len(r.Body), len(identity.Body)/4, c.accept)
			}
			// Chunked, or the length of the bytes sent: never the
			// uncompressed length.
			if cl := r.Header.Get("Content-Length"); cl != "" {
				require.Equal(t, strconv.Itoa(len(r.Body)), cl, c.accept)
			}
		}
	})

	t.Run("a small answer is left as it is, with its length", func(t *testing.T) {
		r := a.rawGet(recordsPath("r1", "areas")+"/area-001", "gzip, zstd", "Authorization", auth)
		require.Equal(t, http.StatusOK, r.Status)
		require.Empty(t, r.Header.Get("Content-Encoding"))
		require.Contains(t, r.Header.Values("Vary"), "Accept-Encoding")
		require.Equal(t, strconv.Itoa(len(r.Body)), r.Header.Get("Content-Length"))
		require.Less(t, len(r.Body), 1400)
		p := a.rawGet("/v1/restaurants/nope/collections/areas/records", "gzip", "Authorization", auth)
		require.Equal(t, http.StatusNotFound, p.Status)
		require.Empty(t, p.Header.Get("Content-Encoding"), "a problem document is small")
		require.Equal(t, "application/problem+json", p.Header.Get("Content-Type"))
	})

	t.Run("a HEAD is not compressed", func(t *testing.T) {
		r, err := http.NewRequest(http.MethodHead, a.srv.URL+"/openapi.json", nil)
		require.NoError(t, err)
		r.Header.Set("Accept-Encoding", "gzip")
		res, err := a.srv.Client().Do(r)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Empty(t, res.Header.Get("Content-Encoding"))
		get := a.rawGet("/openapi.json", "gzip")
		require.Equal(t, "gzip", get.Header.Get("Content-Encoding"), "the GET is")
	})

	t.Run("file downloads: never compressed", func(t *testing.T) {
		text := []byte(strings.Repeat("temperature,fridge,4.0\n", 3000))
		a.put(key, "r1", "drive-files", "f1", "m-f1", map[string]any{"s3Key": "k", "name": "log.csv", "sizeBytes": len(text),
			"asset": map[string]any{"objectKey": "log.csv", "status": "pending"}})
		require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "log.csv"), "text/csv", digestHeader(text), text).Status)
		u := mustRequestURI(t, a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL)
		for _, accept := range []string{"gzip", "zstd", "gzip, zstd"} {
			r := a.rawGet(u, accept)
			require.Equal(t, http.StatusOK, r.Status)
			require.Empty(t, r.Header.Get("Content-Encoding"), accept)
			require.Equal(t, strconv.Itoa(len(text)), r.Header.Get("Content-Length"), accept)
			require.Equal(t, text, r.Body, accept)
			part := a.rawGet(u, accept, "Range", "bytes=23-45")
			require.Equal(t, http.StatusPartialContent, part.Status)
			require.Empty(t, part.Header.Get("Content-Encoding"), accept)
			require.Equal(t, string(text[23:46]), string(part.Body), accept)
			require.Equal(t, "23", part.Header.Get("Content-Length"), accept)
		}
	})
}
