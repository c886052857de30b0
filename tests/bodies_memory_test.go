package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostileBodies are 1 MiB JSON bodies made of small values where no schema
// allows them: an unknown member holding an array of zeros, an object of
// tens of thousands of unknown members, and an MCP call whose _meta is an
// array of zeros. Decoded into generic values each would take about 40
// times its size.
func hostileBodies() (ingestArray, ingestMembers, mcpMeta []byte) {
	const size = 1 << 20
	zeros := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n/2), ",") }
	envelope := func(data string) []byte {
		return []byte(`{"id":"a1","restaurantId":"r1","mutationId":"m1","capturedAt":"1700000000000","sourceVersion":null,` +
			`"payloadVersion":1,"deleted":false,"data":` + data + `}`)
	}
	ingestArray = envelope(`{"name":"x","isDeleted":false,"x":[` + zeros(size-200) + `]}`)
	var members strings.Builder
	for i := 0; members.Len() < size-200; i++ {
		fmt.Fprintf(&members, `"m%d":0,`, i)
	}
	ingestMembers = envelope(`{` + members.String() + `"name":"x"}`)
	mcpMeta = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_restaurants","arguments":{},` +
		`"_meta":{"x":[` + zeros(size-200) + `]}}}`)
	return
}

// 60 hostile 1 MiB bodies at once, REST and MCP, are each refused with a
// 400 that points at the bound they cross, and keep serve under 300 MB
// (its peak resident set, VmHWM), where decoding them took it to 2.6 GB.
func TestHostileBodiesMemory(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	writer := a.newKey(grant("r1", "areas:write"))
	reader := a.newKey(grant("r1", "areas:read"))
	p := startServe(t, "DATABASE_URL="+a.cfg.DatabaseURL, "FOODSAFE_BLOB_DIR="+t.TempDir())
	base := p.peakRSS(t)
	arr, members, meta := hostileBodies()
	path := "/v1/ingest/restaurants/r1/collections/areas/records/a1/mutations/m1"
	type sent struct {
		body    []byte
		path    string
		key     string
		pointer string
	}
	kinds := []sent{{arr, path, writer, "/data/x"}, {members, path, writer, "/data"}, {meta, "/mcp", reader, "/params/_meta/x"}}
	var wg sync.WaitGroup
	res := make([]response, 60)
	for i := range res {
		k := kinds[i%len(kinds)]
		wg.Go(func() {
			hr, err := http.NewRequest(http.MethodPut, p.URL+k.path, bytes.NewReader(k.body))
			if err != nil {
				t.Errorf("request: %v", err)
				return
			}
			if k.path == "/mcp" {
				hr.Method = http.MethodPost
				hr.Header.Set("Accept", "application/json, text/event-stream")
			}
			hr.Header.Set("Authorization", "Bearer "+k.key)
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set("Idempotency-Key", "m1")
			r, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Errorf("send: %v", err)
				return
			}
			defer r.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(r.Body)
			res[i] = response{Status: r.StatusCode, Header: r.Header, Body: b.Bytes()}
		})
	}
	wg.Wait()
	for i, r := range res {
		pr := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
		require.Len(t, pr.Errors, 1, "%s", r.Body)
		require.Equal(t, kinds[i%len(kinds)].pointer, pr.Errors[0].Pointer)
	}
	peak := p.peakRSS(t)
	t.Logf("60 hostile 1 MiB bodies at once: serve's peak RSS %.0f MB (after start-up %.0f MB)", float64(peak)/1e6, float64(base)/1e6)
	require.Less(t, peak, int64(300e6))
}
