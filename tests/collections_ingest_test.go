package tests

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

func area(name string) map[string]any { return map[string]any{"name": name, "isDeleted": false} }

func TestIngestEnvelope(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_123)
	a := newApp(t, withClock(func() time.Time { return now }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))

	r := a.ingest(key, "r1", "areas", "area-1", "m-1", snapshot("r1", "area-1", "m-1", 1_700_000_000_000, false, area("Kitchen")))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Empty(t, r.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, `{"data":{
		"id":"area-1","restaurantId":"r1","collection":"areas","data":{"name":"Kitchen","isDeleted":false},
		"deleted":false,"capturedAt":"1700000000000","receivedAt":"1800000000123","sequence":"1",
		"mutationId":"m-1","sourceVersion":null,"payloadVersion":1,"stateKind":"received-shadow-snapshot"}}`, string(r.Body))

	// Sequences grow per stream; the single-record read shows the latest.
	e := a.put(key, "r1", "areas", "area-1", "m-2", area("Kitchen (hot)"))
	require.Equal(t, "2", e.Sequence)
	got := a.getAs(key, "/v1/restaurants/r1/collections/areas/records/area-1")
	require.Equal(t, http.StatusOK, got.Status)
	require.Contains(t, string(got.Body), `"Kitchen (hot)"`)
	require.Contains(t, string(got.Body), `"sequence":"2"`)
}

func TestIngestReplayAndConflicts(t *testing.T) {
	t.Parallel()
	clock := time.UnixMilli(1_800_000_000_000)
	var mu sync.Mutex
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:write"))
	body := snapshot("r1", "area-1", "m-1", 1_700_000_000_000, false, area("Kitchen"))

	first := a.ingest(key, "r1", "areas", "area-1", "m-1", body)
	require.Equal(t, http.StatusOK, first.Status)
	mu.Lock()
	clock = clock.Add(time.Hour) // a replay does not get a new receivedAt
	mu.Unlock()
	again := a.ingest(key, "r1", "areas", "area-1", "m-1", body)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body), "same body as the first time")

	// The record moved on; replaying the old mutation still answers as the
	// first time and changes nothing.
	require.Equal(t, "2", a.put(key, "r1", "areas", "area-1", "m-2", area("Kitchen v2")).Sequence)
	old := a.ingest(key, "r1", "areas", "area-1", "m-1", body)
	require.Equal(t, "true", old.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(old.Body))
	require.Contains(t, string(a.getAs(key, "/v1/restaurants/r1/collections/areas/records/area-1").Body), "Kitchen v2")

	// Reusing a mutation id for anything else is a conflict.
	otherData := snapshot("r1", "area-1", "m-1", 1_700_000_000_000, false, area("Pantry"))
	requireProblem(t, a.ingest(key, "r1", "areas", "area-1", "m-1", otherData), http.StatusConflict, "conflict")
	otherRecord := snapshot("r1", "area-2", "m-1", 1_700_000_000_000, false, area("Kitchen"))
	requireProblem(t, a.ingest(key, "r1", "areas", "area-2", "m-1", otherRecord), http.StatusConflict, "conflict")
	requireProblem(t, a.ingest(key, "r1", "products", "area-1", "m-1", body), http.StatusConflict, "conflict")
	otherCapture := snapshot("r1", "area-1", "m-1", 1_700_000_000_001, false, area("Kitchen"))
	requireProblem(t, a.ingest(key, "r1", "areas", "area-1", "m-1", otherCapture), http.StatusConflict, "conflict")

	// None of that moved the stream: the next change is sequence 3.
	require.Equal(t, "3", a.put(key, "r1", "areas", "area-3", "m-3", area("Bar")).Sequence)
}

func TestIngestTombstones(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	a.put(key, "r1", "areas", "a1", "m1", area("Kitchen"))

	r := a.ingest(key, "r1", "areas", "a1", "m2", snapshot("r1", "a1", "m2", 1, true, nil))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var env struct{ Data map[string]any }
	r.JSON(t, &env)
	require.Equal(t, true, env.Data["deleted"])
	require.NotContains(t, env.Data, "data", "a tombstone has no data member")

	// A tombstone may carry data: not stored, and not validated either
	// (spec 4.6 asks for valid data only when deleted is false).
	r = a.ingest(key, "r1", "areas", "a2", "m3", snapshot("r1", "a2", "m3", 1, true, area("Gone")))
	require.Equal(t, http.StatusOK, r.Status)
	require.NotContains(t, string(r.Body), "Gone")
	r = a.ingest(key, "r1", "areas", "a3", "m4", snapshot("r1", "a3", "m4", 1, true, map[string]any{"name": 1}))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.NotContains(t, string(r.Body), `"name"`)

	// The single-record read shows the tombstone: the only proof of deletion.
	g := a.getAs(key, "/v1/restaurants/r1/collections/areas/records/a1")
	require.Equal(t, http.StatusOK, g.Status)
	require.Contains(t, string(g.Body), `"deleted":true`)
	require.NotContains(t, string(g.Body), `"data"`)
	requireProblem(t, a.getAs(key, "/v1/restaurants/r1/collections/areas/records/never"), http.StatusNotFound, "not-found")

	// A record may come back after deletion.
	e := a.put(key, "r1", "areas", "a1", "m5", area("Kitchen again"))
	require.False(t, e.Deleted)
}

// Soft delete is data: such records stay live and readable.
func TestSoftDeleteIsData(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "products:write", "products:read"))
	e := a.put(key, "r1", "products", "p1", "m1", map[string]any{"name": "Old sauce", "isDeleted": true})
	require.False(t, e.Deleted)
	g := a.getAs(key, "/v1/restaurants/r1/collections/products/records/p1")
	require.Contains(t, string(g.Body), `"deleted":false`)
	require.Contains(t, string(g.Body), `"isDeleted":true`)
	var p walkPage
	a.getAs(key, recordsPath("r1", "products")).JSON(t, &p)
	require.Len(t, p.Data, 1)
	require.False(t, p.Data[0].Deleted)
}

// ingestErrorsBundle is what each TestIngestRequestErrors case starts
// from: an app refusing bodies over 32 KiB, a writer key, and a valid
// snapshot for one path.
type ingestErrorsBundle struct {
	a    *app
	key  string
	good map[string]any
	path string
}

// with returns a copy of the valid snapshot changed by f.
func (b *ingestErrorsBundle) with(t *testing.T, f func(map[string]any)) map[string]any {
	t.Helper()
	c := deepCopy(t, b.good)
	f(c)
	return c
}

// requireChanges asserts how many changes the stream holds: refused
// requests write nothing.
func (b *ingestErrorsBundle) requireChanges(t *testing.T, want int) {
	t.Helper()
	var n int
	require.NoError(t, b.a.store().Pool().QueryRow(context.Background(), `SELECT count(*) FROM record_changes`).Scan(&n))
	require.Equal(t, want, n)
}

func TestIngestRequestErrors(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *ingestErrorsBundle {
		t.Helper()
		a := newApp(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = 32 << 10 }))
		a.addRestaurants("r1")
		return &ingestErrorsBundle{a: a, key: a.newKey(grant("r1", "areas:write")),
			good: snapshot("r1", "a1", "m1", 1, false, area("Kitchen")), path: ingestPath("r1", "areas", "a1", "m1")}
	}

	t.Run("invalid body members point at the member", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, key, path, with := b.a, b.key, b.path, func(f func(map[string]any)) map[string]any { return b.with(t, f) }
		bodyCases := map[string]struct {
			body    map[string]any
			pointer string
		}{
			"body id differs":         {with(func(b map[string]any) { b["id"] = "a2" }), "/id"},
			"body restaurant differs": {with(func(b map[string]any) { b["restaurantId"] = "r2" }), "/restaurantId"},
			"body mutation differs":   {with(func(b map[string]any) { b["mutationId"] = "m2" }), "/mutationId"},
			"payloadVersion 2":        {with(func(b map[string]any) { b["payloadVersion"] = 2 }), "/payloadVersion"},
			"sourceVersion string":    {with(func(b map[string]any) { b["sourceVersion"] = "v1" }), "/sourceVersion"},
			"deleted missing":         {with(func(b map[string]any) { delete(b, "deleted") }), "/deleted"},
			"deleted not bool":        {with(func(b map[string]any) { b["deleted"] = "false" }), "/deleted"},
			"live without data":       {with(func(b map[string]any) { delete(b, "data") }), "/data"},
			"data not object":         {with(func(b map[string]any) { b["data"] = []any{} }), "/data"},
			"unknown envelope member": {with(func(b map[string]any) { b["collection"] = "areas" }), "/collection"},
			"capturedAt missing":      {with(func(b map[string]any) { delete(b, "capturedAt") }), "/capturedAt"},
			"mutationId missing":      {with(func(b map[string]any) { delete(b, "mutationId") }), "/mutationId"},
			"data member invalid":     {with(func(b map[string]any) { b["data"].(map[string]any)["name"] = false }), "/data/name"},
			"data member missing":     {with(func(b map[string]any) { delete(b["data"].(map[string]any), "isDeleted") }), "/data/isDeleted"},
		}
		for name, tc := range bodyCases {
			t.Run(name, func(t *testing.T) {
				p := requireProblem(t, a.putJSON(key, path, tc.body, "Idempotency-Key", "m1"), http.StatusBadRequest, "invalid-request")
				var ptrs []string
				for _, e := range p.Errors {
					ptrs = append(ptrs, e.Pointer)
				}
				require.Contains(t, ptrs, tc.pointer, "%+v", p.Errors)
			})
		}
		b.requireChanges(t, 0)
	})

	t.Run("the Idempotency-Key header must repeat the mutation id", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, key, path, good := b.a, b.key, b.path, b.good
		headerCases := map[string]struct {
			headers []string
			param   string
		}{
			"no Idempotency-Key":     {nil, "Idempotency-Key"},
			"other Idempotency-Key":  {[]string{"Idempotency-Key", "m2"}, "Idempotency-Key"},
			"empty Idempotency-Key":  {[]string{"Idempotency-Key", ""}, "Idempotency-Key"},
			"lowercase header works": {[]string{"idempotency-key", "m1"}, ""},
		}
		for name, tc := range headerCases {
			t.Run(name, func(t *testing.T) {
				r := a.putJSON(key, path, good, tc.headers...)
				if tc.param == "" {
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
					return
				}
				p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
				require.Equal(t, tc.param, p.Errors[0].Parameter)
			})
		}
		// Only the one accepted request wrote.
		b.requireChanges(t, 1)
	})

	t.Run("invalid ids in the path name the parameter", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, key, good := b.a, b.key, b.good
		p := requireProblem(t, a.putJSON(key, ingestPath("r1", "areas", "a%20b", "m9"), good, "Idempotency-Key", "m9"), http.StatusBadRequest, "invalid-request")
		require.Equal(t, "recordId", p.Errors[0].Parameter)
		p = requireProblem(t, a.putJSON(key, ingestPath("r1", "areas", "a1", "-m"), good, "Idempotency-Key", "-m"), http.StatusBadRequest, "invalid-request")
		require.Equal(t, "mutationId", p.Errors[0].Parameter)
		b.requireChanges(t, 0)
	})

	t.Run("bodies that are not one JSON object", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, key, path, good := b.a, b.key, b.path, b.good
		for name, raw := range map[string]struct{ ct, body string }{
			"not json":       {"application/json", `{"id":"a1",`},
			"array":          {"application/json", `[]`},
			"null":           {"application/json", `null`},
			"wrong type":     {"text/plain", string(mustJSON(t, good))},
			"no type":        {"", string(mustJSON(t, good))},
			"two objects":    {"application/json", string(mustJSON(t, good)) + "{}"},
			"invalid utf8":   {"application/json", "{\"id\":\"\xff\"}"},
			"deeply nested":  {"application/json", strings.Repeat("[", 12000) + strings.Repeat("]", 12000)},
			"number too big": {"application/json", strings.Replace(string(mustJSON(t, good)), `"payloadVersion":1`, `"payloadVersion":1e999`, 1)},
		} {
			t.Run(name, func(t *testing.T) {
				r := a.putRaw(key, path, raw.ct, []byte(raw.body), "Idempotency-Key", "m1")
				requireProblem(t, r, http.StatusBadRequest, "invalid-request")
			})
		}
		b.requireChanges(t, 0)
	})

	t.Run("a body over the limit is 413", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		big := b.with(t, func(b map[string]any) { b["data"].(map[string]any)["name"] = strings.Repeat("x", 40<<10) })
		requireProblem(t, b.a.putJSON(b.key, b.path, big, "Idempotency-Key", "m1"), http.StatusRequestEntityTooLarge, "payload-too-large")
		b.requireChanges(t, 0)
	})
}

// Twenty identical submissions racing: applied once, all answered 200.
func TestIngestRace(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	body := snapshot("r1", "a1", "race", 1, false, area("Kitchen"))
	results := concurrently(20, func() response { return a.ingest(key, "r1", "areas", "a1", "race", body) })
	requireAppliedOnce(t, results)
	for _, r := range results {
		require.JSONEq(t, string(results[0].Body), string(r.Body), "every answer is the first one")
	}
	var changes, seq int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*), max(sequence) FROM record_changes`).Scan(&changes, &seq))
	require.Equal(t, 1, changes)
	require.Equal(t, 1, seq, "no sequence burnt by the losers")
	require.Equal(t, "2", a.put(key, "r1", "areas", "a2", "next", area("Bar")).Sequence)
}

// Spec 4.4 precedence: no grant for the restaurant is 404 before anything;
// then an unknown collection is 400; then a missing scope is 403.
func TestCollectionAccessPrecedence(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:read", "users:write"))
	deliveriesOnly := a.newKey(grant("r1", "deliveries:read"))

	type call struct {
		method, path string
	}
	walk := func(r, c string) call { return call{"GET", recordsPath(r, c)} }
	one := func(r, c string) call { return call{"GET", recordsPath(r, c) + "/x"} }
	write := func(r, c string) call { return call{"PUT", ingestPath(r, c, "x", "m")} }
	do := func(k string, c call) response {
		if c.method == "PUT" {
			return a.ingest(k, strings.Split(c.path, "/")[4], strings.Split(c.path, "/")[6], "x", "m",
				snapshot(strings.Split(c.path, "/")[4], "x", "m", 1, false, area("x")))
		}
		return a.getAs(k, c.path)
	}
	for _, tc := range []struct {
		name   string
		call   call
		status int
		suffix string
	}{
		{"ungranted restaurant, unknown collection", walk("r2", "fridges"), 404, "not-found"},
		{"ungranted restaurant, known collection", walk("r2", "areas"), 404, "not-found"},
		{"ungranted restaurant record", one("r2", "areas"), 404, "not-found"},
		{"ungranted restaurant write", write("r2", "fridges"), 404, "not-found"},
		{"unknown collection", walk("r1", "fridges"), 400, "invalid-request"},
		{"unknown collection record", one("r1", "Areas"), 400, "invalid-request"},
		{"unknown collection write", write("r1", "fridges"), 400, "invalid-request"},
		{"missing read scope", walk("r1", "users"), 403, "forbidden"},
		{"missing read scope record", one("r1", "users"), 403, "forbidden"},
		{"read scope does not write", write("r1", "areas"), 403, "forbidden"},
		{"write scope does not read", walk("r1", "users"), 403, "forbidden"},
		{"granted walk", walk("r1", "areas"), 200, ""},
		{"granted write", write("r1", "users"), 400, "invalid-request"}, // reaches validation: area data is not a user
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(key, tc.call)
			if tc.suffix == "" {
				require.Equal(t, tc.status, r.Status, "%s", r.Body)
				return
			}
			requireProblem(t, r, tc.status, tc.suffix)
		})
	}
	requireProblem(t, a.get(recordsPath("r1", "areas")), http.StatusUnauthorized, "unauthorized")

	// The collection list shows only what the key may read.
	r := a.getAs(key, "/v1/restaurants/r1/collections")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"data":[{"collection":"areas","readScope":"areas:read",
		"description":"Zones of the restaurant (kitchen, cold room, bar...) that equipment and cleaning tasks belong to.",
		"stateKind":"received-shadow-snapshot","payloadVersion":1}]}`, string(r.Body))
	require.JSONEq(t, `{"data":[]}`, string(a.getAs(deliveriesOnly, "/v1/restaurants/r1/collections").Body))
	requireProblem(t, a.getAs(key, "/v1/restaurants/r2/collections"), http.StatusNotFound, "not-found")
}

// Every collection has a real description, and they are all listed for a
// key that can read everything, sorted by name.
func TestCollectionDescriptors(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	var reads []string
	for c := range loadCollectionFixtures(t) {
		reads = append(reads, c+":read")
	}
	key := a.newKey(grant("r1", reads...))
	var out struct {
		Data []struct {
			Collection, ReadScope, Description, StateKind string
			PayloadVersion                                int
		}
	}
	a.getAs(key, "/v1/restaurants/r1/collections").JSON(t, &out)
	require.Len(t, out.Data, 24)
	for i, d := range out.Data {
		if i > 0 {
			require.Less(t, out.Data[i-1].Collection, d.Collection)
		}
		require.Equal(t, d.Collection+":read", d.ReadScope)
		require.Greater(t, len(d.Description), 30, d.Collection)
		require.Equal(t, "received-shadow-snapshot", d.StateKind)
		require.Equal(t, 1, d.PayloadVersion)
	}
}

// Strings PostgreSQL cannot store (a NUL character) are a 400 naming the
// member, never a 500.
func TestIngestRejectsNUL(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "deliveries:write"))
	raw := []byte(`{"id":"a1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,` +
		`"deleted":false,"data":{"name":"Cold\u0000room","isDeleted":false}}`)
	p := requireProblem(t, a.putRaw(key, ingestPath("r1", "areas", "a1", "m1"), "application/json", raw, "Idempotency-Key", "m1"),
		http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/data/name", p.Errors[0].Pointer)

	d := []byte(strings.Replace(string(mustJSON(t, deliveryJSON("d1", 1))), `"Driver late"`, `"Driver\u0000late"`, 1))
	p = requireProblem(t, a.putRaw(key, "/v1/ingest/restaurants/r1/deliveries/d1", "application/json", d), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/commentary", p.Errors[0].Pointer)
}
