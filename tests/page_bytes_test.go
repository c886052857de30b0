package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// bigStrings are n strings of 10,000 letters (the longest free text the
// spec allows), different from one call to the next: a list of them is
// the largest thing a record or a delivery may carry, under 1 MiB in all.
func bigStrings(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	b := make([]byte, 10_000)
	for i := range out {
		for j := range b {
			b[j] = 'a' + byte(rng.IntN(26))
		}
		out[i] = string(b)
	}
	return out
}

// pageBytesServe is a real serve over 100 users records of about 1 MiB
// each (99 strings of 10,000 letters in modules) and 25 deliveries of
// about 1 MiB (99 such reasons), with a key that reads both. The first
// record and the first delivery are written through the API, which
// accepts them; the rest, the same shape with other letters, straight
// through the store (the API takes about 0.3 s to validate each).
func pageBytesServe(t *testing.T) (*serveProc, string) {
	t.Helper()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "users:read", "users:write", "deliveries:read", "deliveries:write"))
	rng := rand.New(rand.NewPCG(49, 1))
	captured := time.Now().Add(-time.Hour).UnixMilli()
	ctx := context.Background()
	for i := range 100 {
		id, mutation := fmt.Sprintf("u%03d", i), fmt.Sprintf("m%03d", i)
		data := map[string]any{"lastName": "Big", "firstName": id, "email": id + "@example.com", "modules": bigStrings(rng, 99)}
		if i == 0 {
			body := map[string]any{"id": id, "restaurantId": "r1", "mutationId": mutation, "capturedAt": strconv.FormatInt(captured, 10),
				"sourceVersion": nil, "payloadVersion": 1, "deleted": false, "data": data}
			r := a.putJSON(key, "/v1/ingest/restaurants/r1/collections/users/records/"+id+"/mutations/"+mutation, body,
				"Idempotency-Key", mutation)
			require.Equal(t, http.StatusOK, r.Status, "%.300s", r.Body)
			continue
		}
		raw, err := json.Marshal(data)
		require.NoError(t, err)
		digest := sha256.Sum256(raw)
		_, _, err = a.store().RecordIngest(ctx, store.Mutation{
			RecordKey:  store.RecordKey{RestaurantID: "r1", Collection: "users", RecordID: id},
			MutationID: mutation, Data: raw, CapturedAt: captured, PayloadVersion: 1, RequestSHA256: digest[:],
		}, captured)
		require.NoError(t, err)
	}
	for i := range 25 {
		id := fmt.Sprintf("del-%02d", i)
		d := wire.Delivery{ID: id, RestaurantID: "r1", OccurredAt: wire.Millis(captured + int64(i)), Supplier: wire.Supplier{ID: "s1", Name: "Big"},
			TemperatureRecords: []wire.TemperatureRecord{}, NonComplianceReasons: bigStrings(rng, 99), CorrectiveActions: []string{}, ImageCount: 0}
		if i == 0 {
			r := a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/"+id, d)
			require.Equal(t, http.StatusOK, r.Status, "%.300s", r.Body)
			continue
		}
		digest := sha256.Sum256([]byte(id))
		_, _, err := a.store().DeliveryCreate(ctx, d, digest[:])
		require.NoError(t, err)
	}
	return startServe(t, "DATABASE_URL="+a.cfg.DatabaseURL, "FOODSAFE_BLOB_DIR="+t.TempDir()), key
}

// cpuSeconds is the CPU time (user and system) the process has used.
func (p *serveProc) cpuSeconds(t testing.TB) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	require.NoError(t, err)
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 14th and 15th fields of the line, in clock ticks
	// (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(t, err)
	st, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err)
	return float64(ut+st) / 100
}

// getJSON sends a GET with key to p and decodes a 200's body into v,
// returning the body's size.
func getJSON(t *testing.T, p *serveProc, key, path string, v any) int {
	t.Helper()
	hr, err := http.NewRequest(http.MethodGet, p.URL+path, nil)
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%.300s", b)
	require.NoError(t, json.Unmarshal(b, v))
	return len(b)
}

// mcpCallRaw calls a tool on p's /mcp at the newest revision (no
// handshake) and returns the JSON-RPC result's structured content.
func mcpCallRaw(t *testing.T, p *serveProc, key, tool string, args map[string]any) json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion": rev2026, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, p.URL+"/mcp", bytes.NewReader(body))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+key)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("MCP-Protocol-Version", rev2026)
	hr.Header.Set("Mcp-Method", "tools/call")
	hr.Header.Set("Mcp-Name", tool)
	res, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%.300s", b)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.SplitSeq(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				b = []byte(d)
			}
		}
	}
	var msg struct {
		Result struct {
			IsError           bool            `json:"isError"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(b, &msg), "%.300s", b)
	require.Nil(t, msg.Error, "%.300s", b)
	require.False(t, msg.Result.IsError, "%.300s", b)
	return msg.Result.StructuredContent
}

// 100 records of about 1 MiB: walked whole (each record once, over pages
// that end early by bytes), asked for by three clients that do not read,
// HEADed ten times and read through MCP walk_records (limit 100) and
// list_deliveries (limit 20, 1 MiB deliveries), keep serve's peak RSS
// under 400 MB, where a page of them built and held several copies of
// 103 MB (2 GB for three unread ones, 3.28 GB for one MCP call). Ten HEADs
// cost under 0.5 s of CPU (0.4 s each when a HEAD built the page).
func TestPagesBoundedByBytes(t *testing.T) {
	t.Parallel()
	p, key := pageBytesServe(t)
	base, started := p.peakRSS(t), p.cpuSeconds(t)
	walk := "/v1/restaurants/r1/collections/users/records?limit=100"

	// The walk: every record once, pages ended by bytes.
	seen := map[string]int{}
	pages := 0
	for path := walk; ; {
		var page struct {
			Data []struct {
				ID   string          `json:"id"`
				Data json.RawMessage `json:"data"`
			} `json:"data"`
			NextCursor    *string `json:"nextCursor"`
			ChangesCursor *string `json:"changesCursor"`
		}
		size := getJSON(t, p, key, path, &page)
		pages++
		require.Less(t, size, 4<<20+(1<<20)+(64<<10), "a page is at most FOODSAFE_MAX_PAGE_BYTES and one record")
		for _, r := range page.Data {
			seen[r.ID]++
		}
		if page.NextCursor == nil {
			require.NotNil(t, page.ChangesCursor, "the last page")
			break
		}
		require.NotEmpty(t, page.Data, "a page that continues carries records")
		path = walk + "&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	require.Len(t, seen, 100)
	for id, n := range seen {
		require.Equal(t, 1, n, "record %s", id)
	}
	require.Greater(t, pages, 5, "100 records of 1 MiB do not fit a page of 4 MiB")
	t.Logf("the walk: %d pages, %.2f s of serve's CPU", pages, p.cpuSeconds(t)-started)

	// The deliveries in receive order: each once, over pages ended by
	// bytes.
	changes := "/v1/restaurants/r1/delivery-changes?limit=100"
	delivered := map[string]int{}
	for path, n := changes, 0; ; n++ {
		require.Less(t, n, 30)
		var page struct {
			Data       []struct{ ID string }
			NextCursor *string
		}
		size := getJSON(t, p, key, path, &page)
		require.Less(t, size, 4<<20+(1<<20)+(64<<10), "a page is at most FOODSAFE_MAX_PAGE_BYTES and one delivery")
		for _, d := range page.Data {
			delivered[d.ID]++
		}
		if page.NextCursor == nil {
			require.Greater(t, n, 3, "25 deliveries of 1 MiB do not fit a page of 4 MiB")
			break
		}
		path = changes + "&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	require.Len(t, delivered, 25)
	for id, n := range delivered {
		require.Equal(t, 1, n, "delivery %s", id)
	}

	// Three clients ask for the first page and read only its status line.
	for range 3 {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", walk, key)
		require.NoError(t, err)
		status, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, status, " 200 ")
	}

	// Ten HEADs: the status and headers of the page, no body built.
	cpu := p.cpuSeconds(t)
	for range 10 {
		hr, err := http.NewRequest(http.MethodHead, p.URL+walk, nil)
		require.NoError(t, err)
		hr.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(hr)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Empty(t, b)
		require.Equal(t, "application/json; charset=utf-8", res.Header.Get("Content-Type"))
	}
	heads := p.cpuSeconds(t) - cpu
	t.Logf("10 HEADs of a page of 1 MiB records: %.2f s of serve's CPU", heads)
	require.Less(t, heads, 0.5)

	// MCP: a walk page of limit 100 and a page of 20 deliveries.
	var walked struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	require.NoError(t, json.Unmarshal(mcpCallRaw(t, p, key, "walk_records",
		map[string]any{"restaurantId": "r1", "collection": "users", "limit": 100}), &walked))
	require.NotEmpty(t, walked.Data)
	require.Less(t, len(walked.Data), 100, "the page ended by bytes")
	require.NotNil(t, walked.NextCursor)
	var listed struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"nextCursor"`
	}
	to := strconv.FormatInt(time.Now().UnixMilli(), 10)
	from := strconv.FormatInt(time.Now().Add(-48*time.Hour).UnixMilli(), 10)
	require.NoError(t, json.Unmarshal(mcpCallRaw(t, p, key, "list_deliveries",
		map[string]any{"restaurantId": "r1", "from": from, "to": to, "limit": 20}), &listed))
	require.NotEmpty(t, listed.Data)
	require.Less(t, len(listed.Data), 20, "the page ended by bytes")
	require.NotNil(t, listed.NextCursor)

	peak := p.peakRSS(t)
	t.Logf("serve's peak RSS %.0f MB (after start-up %.0f MB), %.2f s of CPU in all", float64(peak)/1e6, float64(base)/1e6, p.cpuSeconds(t)-started)
	require.Less(t, peak, int64(400e6))
}

// serve sets its soft memory limit unless GOMEMLIMIT is set, and its
// starting line says which applies.
func TestServeSetsAMemoryLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for env, want := range map[string]string{"GOMEMLIMIT=": `"gomemlimit":"256MiB"`, "GOMEMLIMIT=1GiB": `"gomemlimit":"1GiB (GOMEMLIMIT)"`} {
		p := startServe(t, "DATABASE_URL="+a.cfg.DatabaseURL, "FOODSAFE_BLOB_DIR="+t.TempDir(), env)
		var line string
		for l := range strings.SplitSeq(p.logs.String(), "\n") {
			if strings.Contains(l, `"msg":"starting"`) {
				line = l
			}
		}
		require.Contains(t, line, want, env)
		p.stop(t)
	}
}
