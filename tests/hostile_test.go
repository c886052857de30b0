package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// A JSON-RPC batch is refused at every protocol revision, before any of
// its calls runs: one POST is one message, one budget unit, one audit row.
func TestMCPRefusesBatches(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a := f.a
	key := a.newKey(grant(restA, readScopes...))
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"walk_records","arguments":{"restaurantId":"` + restA + `","collection":"areas"}}}`
	var calls []string
	for i := range 50 {
		calls = append(calls, fmt.Sprintf(call, i))
	}
	batch := "[" + strings.Join(calls, ",") + "]"
	revisions := []string{"", "2024-11-05", "2025-03-26", "2025-06-18", rev2026}
	for _, rev := range revisions {
		for _, body := range []string{batch, " \r\n\t" + batch, "[]"} {
			h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
				"Accept": "application/json, text/event-stream"}
			if rev != "" {
				h["MCP-Protocol-Version"] = rev
			}
			r := a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
			p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
			require.Contains(t, p.Detail, "JSON-RPC batches", "revision %q", rev)
			require.NotContains(t, string(r.Body), "areas")
		}
	}
	var refused int
	for _, e := range flushedAudit(t, a) {
		if e.Route == "/mcp" && e.KeyPublicID == publicID(t, key) {
			require.Equal(t, "batch refused", e.Outcome)
			require.Equal(t, http.StatusBadRequest, e.Status)
			refused++
		}
	}
	require.Equal(t, 3*len(revisions), refused, "one audit row per POST")
	require.NotContains(t, a.logs.String(), `"status":500`)
}

// openUpload starts a chunked upload on a connection of its own with
// Expect: 100-continue, and returns the server's first answer. Go's server
// sends 100 Continue when the handler first reads the body, which it does
// only once the upload holds its slot: a 100 means the slot is taken and
// the upload is waiting for bytes that this test sends when it chooses.
func openUpload(t *testing.T, base, key, path string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/pdf\r\n"+
		"Repr-Digest: %s\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n", path, u.Host, key, digestHeader([]byte("pdf")))
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	return res, conn, br
}

// finishUpload ends an open upload with no bytes (so a digest mismatch)
// and reads the final answer: the slot is free once it has arrived.
func finishUpload(t *testing.T, conn net.Conn, br *bufio.Reader) response {
	t.Helper()
	_, err := io.WriteString(conn, "0\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func bodyOf(t *testing.T, res *http.Response) response {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Uploads in progress are capped per key (429) and per process (503),
// both with Retry-After, and a finished upload gives its slot back.
func TestUploadSlots(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey, c.UploadsMax = 2, 3 }))
	a.addRestaurants("r1")
	k1 := a.newKey(grant("r1", "drive-files:write"))
	k2 := a.newKey(grant("r1", "drive-files:write"))
	path := func(key, id string) string {
		a.put(key, "r1", "drive-files", id, "m-"+id, map[string]any{"s3Key": "k", "name": id, "sizeBytes": 1,
			"asset": map[string]any{"objectKey": id, "status": "pending"}})
		return assetPath("r1", "drive-files", id, id)
	}
	type open struct {
		conn net.Conn
		br   *bufio.Reader
	}
	hold := func(key, id string) open {
		res, conn, br := openUpload(t, a.srv.URL, key, path(key, id))
		require.Equal(t, http.StatusContinue, res.StatusCode, "%s: the upload holds a slot", id)
		return open{conn, br}
	}
	refused := func(key, id string, status int, code string) {
		res, _, _ := openUpload(t, a.srv.URL, key, path(key, id))
		r := bodyOf(t, res)
		requireProblem(t, r, status, code)
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	}
	a1, a2 := hold(k1, "a1"), hold(k1, "a2")
	refused(k1, "a3", http.StatusTooManyRequests, "rate-limit-exceeded")
	b1 := hold(k2, "b1")
	refused(k2, "b2", http.StatusServiceUnavailable, "dependency-unavailable")

	requireProblem(t, finishUpload(t, a1.conn, a1.br), http.StatusBadRequest, "invalid-request")
	b2 := hold(k2, "b2")
	refused(k1, "a4", http.StatusServiceUnavailable, "dependency-unavailable")
	for _, o := range []open{a2, b1, b2} {
		requireProblem(t, finishUpload(t, o.conn, o.br), http.StatusBadRequest, "invalid-request")
	}
	pdf := []byte("pdf")
	r := a.uploadChunked(k1, path(k1, "a5"), "application/pdf", digestHeader(pdf), pdf)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.NotContains(t, a.logs.String(), `"status":500`)
}

// An upload whose client stops sending is cut after the idle timeout,
// long before the whole-upload timeout, and gives its slot back.
func TestUploadIdleTimeout(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) {
		c.UploadIdleTimeout, c.UploadTimeout, c.UploadsPerKey = 300*time.Millisecond, time.Hour, 1
	}))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write"))
	a.put(key, "r1", "drive-files", "f1", "m-f1", map[string]any{"s3Key": "k", "name": "f1", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "f1", "status": "pending"}})
	path := assetPath("r1", "drive-files", "f1", "f1")
	res, conn, br := openUpload(t, a.srv.URL, key, path)
	require.Equal(t, http.StatusContinue, res.StatusCode)
	_, err := io.WriteString(conn, "1\r\np\r\n") // one byte, then silence
	require.NoError(t, err)
	res, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	p := requireProblem(t, bodyOf(t, res), http.StatusRequestTimeout, "upload-too-slow")
	require.Contains(t, p.Detail, "No bytes of the file arrived for 300ms")
	require.True(t, res.Close, "the connection is closed after the cut")
	pdf := []byte("pdf")
	r := a.uploadChunked(key, path, "application/pdf", digestHeader(pdf), pdf)
	require.Equal(t, http.StatusOK, r.Status, "the slot is free again: %s", r.Body)
	require.NotContains(t, a.logs.String(), `"status":500`)
}

// A key pasted in every place a client can put text comes back nowhere:
// not in a problem body or tool result, a log line, an audit row or a
// metric. Its public id stays quotable.
func TestKeyPastedEverywhereIsRedacted(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "deliveries:read", "drive-files:write"))
	secret := secretOf(key)
	var bodies []string
	keep := func(r response) response {
		bodies = append(bodies, string(r.Body))
		return r
	}
	// Headers.
	keep(a.get("/v1/restaurants", "Authorization", "Basic "+key))
	keep(a.get("/v1/restaurants", "Authorization", "Bearer "+key+"x"))
	keep(a.getAs(key, "/v1/restaurants", "X-Request-ID", key))
	// Query and path.
	keep(a.getAs(key, "/v1/restaurants/r1/deliveries?from="+key+"&to=1"))
	keep(a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=1&cursor="+key))
	keep(a.getAs(key, "/v1/restaurants/"+key+"/collections/areas/records"))
	keep(a.getAs(key, "/v1/restaurants/r1/collections/"+key+"/records"))
	keep(a.getAs(key, "/v1/"+key))
	// Body values, member names, sourceVersion.
	area := map[string]any{"name": "x", "isDeleted": false}
	withNote := map[string]any{"name": "x", "isDeleted": false, "note": key}
	withMember := map[string]any{"name": "x", "isDeleted": false, key: 1}
	keep(a.ingest(key, "r1", "areas", "a1", "m1", snapshot("r1", "a1", "m1", 1, false, withNote)))
	p := requireProblem(t, keep(a.ingest(key, "r1", "areas", "a2", "m2", snapshot("r1", "a2", "m2", 1, false, withMember))),
		http.StatusBadRequest, "invalid-request")
	require.Contains(t, string(mustJSON(t, p.Errors)), "[redacted]", "the pointer names the member, redacted")
	sv := snapshot("r1", "a3", "m3", 1, false, area)
	sv["sourceVersion"] = key
	p = requireProblem(t, keep(a.ingest(key, "r1", "areas", "a3", "m3", sv)), http.StatusBadRequest, "invalid-request")
	require.Contains(t, string(mustJSON(t, p.Errors)), "only null is accepted")
	keep(a.ingest(key, key, "areas", key, key, snapshot(key, key, key, 1, false, area)))
	// objectKey and an upload's headers.
	a.put(key, "r1", "drive-files", "f1", "mf1", map[string]any{"s3Key": "k", "name": "f1", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "f1", "status": "pending"}})
	pdf := []byte("pdf")
	keep(a.upload(key, assetPath("r1", "drive-files", "f1", key), "application/pdf", digestHeader(pdf), pdf))
	keep(a.upload(key, assetPath("r1", "drive-files", "f1", "f1"), key, digestHeader(pdf), pdf))
	keep(a.upload(key, assetPath("r1", "drive-files", "f1", "f1"), "application/pdf", key, pdf))
	// MCP: argument values and names.
	for _, args := range []string{`{"restaurantId":"` + key + `","collection":"areas"}`,
		`{"restaurantId":"r1","collection":"areas","cursor":"` + key + `"}`,
		`{"restaurantId":"r1","collection":"areas","` + key + `":1}`} {
		r := a.do(req{Method: http.MethodPost, Path: "/mcp", Header: map[string]string{"Authorization": "Bearer " + key,
			"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
			Body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"walk_records","arguments":` + args + `}}`)})
		keep(r)
	}
	for _, b := range bodies {
		require.NotContains(t, b, secret)
	}
	require.Contains(t, strings.Join(bodies, ""), "[redacted]")
	b, err := json.Marshal(flushedAudit(t, a))
	require.NoError(t, err)
	require.NotContains(t, string(b), secret, "audit rows")
	require.NotContains(t, a.logs.String(), secret, "logs")
	res, err := http.Get(a.opsURL() + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	m, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NotContains(t, string(m), secret, "metrics")
}

// The small refusals: each is a clear 4xx, never a guess or a 500.
func TestHostileSmallRefusals(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	other := a.newKey(grant("r1", "drive-files:read"))

	// Two Authorization headers: which one counts would be a guess.
	hr, err := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/restaurants", nil)
	require.NoError(t, err)
	hr.Header.Add("Authorization", "Bearer "+key)
	hr.Header.Add("Authorization", "Bearer "+other)
	res, err := a.srv.Client().Do(hr)
	require.NoError(t, err)
	p := requireProblem(t, bodyOf(t, res), http.StatusUnauthorized, "unauthorized")
	require.Contains(t, p.Detail, "not one `Bearer <key>`")

	a.put(key, "r1", "drive-files", "f1", "mf1", map[string]any{"s3Key": "k", "name": "f1", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "f1", "status": "pending"}})
	pdf := []byte("pdf")
	for _, ct := range []string{"garbage", "image/", "/jpeg", "image"} {
		r := a.upload(key, assetPath("r1", "drive-files", "f1", "f1"), ct, digestHeader(pdf), pdf)
		p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
		require.Equal(t, "Content-Type", p.Errors[0].Parameter, ct)
	}
	r := a.upload(key, "/v1/ingest/restaurants/r1/collections/drive-files/records/f1/asset?objectKey=%ff%fe", "application/pdf",
		digestHeader(pdf), pdf)
	p = requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	require.Equal(t, "objectKey", p.Errors[0].Parameter)
	require.Contains(t, p.Detail, "UTF-8")
	r = a.upload(key, assetPath("r1", "drive-files", "f1", "f1"), "application/pdf; charset=binary", digestHeader(pdf), pdf)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.NotContains(t, a.logs.String(), `"status":500`)
}
