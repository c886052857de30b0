package tests

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
)

// enableSince enables a restaurant with capture starting at since.
func (a *app) enableSince(id string, since time.Time) {
	a.t.Helper()
	_, err := a.store().RestaurantAdd(context.Background(), id, store.RestaurantChange{EnabledAt: &since})
	require.NoError(a.t, err)
}

// Spec 1: "Only records captured after capture was enabled for a restaurant
// are held. There is no backfill." Events (and deliveries) captured before
// the enablement are refused without stating it; what describes the
// restaurant is accepted whenever captured; tombstones always are.
func TestNoBackfill(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	a := newApp(t, withClock(func() time.Time { return now }))
	enabled := now.Add(-48 * time.Hour)
	a.enableSince("r1", enabled)
	key := a.newKey(grant("r1", "temperature-records:write", "equipment:write", "deliveries:write", "areas:write"))
	before, after := enabled.UnixMilli()-1, enabled.UnixMilli()
	reading := map[string]any{"timestamp": "1", "value": 3.5, "unit": "C", "shift": "AM", "equipmentId": "fridge-1"}

	r := a.ingest(key, "r1", "temperature-records", "t1", "m1", snapshot("r1", "t1", "m1", before, false, reading))
	p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/capturedAt", p.Errors[0].Pointer)
	require.Contains(t, p.Detail, "no backfill")
	for _, leak := range []string{strconv.FormatInt(enabled.UnixMilli(), 10), enabled.UTC().Format("2006-01-02")} {
		require.NotContains(t, string(r.Body), leak, "the enablement date is never exposed")
	}
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "temperature-records", "t1", "m2", snapshot("r1", "t1", "m2", after, false, reading)).Status)
	// A tombstone, whenever captured, is accepted.
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "temperature-records", "t1", "m3", snapshot("r1", "t1", "m3", 0, true, nil)).Status)
	// Reference records are accepted whenever captured: events refer to them.
	eq := map[string]any{"index": 1, "type": "fridge", "name": "Fridge 1", "isDeleted": false}
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "equipment", "fridge-1", "m4", snapshot("r1", "fridge-1", "m4", 0, false, eq)).Status)
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "areas", "a1", "m5", snapshot("r1", "a1", "m5", 1, false, area("Kitchen"))).Status)

	d := deliveryJSON("d1", before)
	p = requireProblem(t, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", d), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/occurredAt", p.Errors[0].Pointer)
	require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d2", deliveryJSON("d2", after)).Status)
}

// receivedAt is never before capturedAt (spec 2.3): a capturedAt more than
// FOODSAFE_MAX_CLOCK_SKEW ahead is refused; within it, receivedAt is raised
// to capturedAt, and later changes of the stream never go below it.
func TestFutureCaptures(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "equipment:write", "deliveries:write"))
	ahead := now.Add(5*time.Minute + time.Millisecond).UnixMilli()
	p := requireProblem(t, a.ingest(key, "r1", "areas", "a1", "m1", snapshot("r1", "a1", "m1", ahead, false, area("x"))),
		http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/capturedAt", p.Errors[0].Pointer)
	require.Contains(t, p.Errors[0].Detail, "future")
	p = requireProblem(t, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", ahead)), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/occurredAt", p.Errors[0].Pointer)

	within := now.Add(5 * time.Minute).UnixMilli()
	r := a.ingest(key, "r1", "areas", "a1", "m2", snapshot("r1", "a1", "m2", within, false, area("x")))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var e struct{ Data envelopeDoc }
	r.JSON(t, &e)
	require.Equal(t, strconv.FormatInt(within, 10), e.Data.CapturedAt)
	require.Equal(t, e.Data.CapturedAt, e.Data.ReceivedAt, "receivedAt raised to capturedAt")
	past := now.Add(-time.Hour).UnixMilli()
	r = a.ingest(key, "r1", "areas", "a2", "m3", snapshot("r1", "a2", "m3", past, false, area("y")))
	r.JSON(t, &e)
	require.Equal(t, strconv.FormatInt(within, 10), e.Data.ReceivedAt, "never earlier than the stream's last receivedAt")
	eq := map[string]any{"index": 1, "type": "fridge", "name": "Fridge 1", "isDeleted": false}
	r = a.ingest(key, "r1", "equipment", "fridge-1", "m4", snapshot("r1", "fridge-1", "m4", past, false, eq))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r.JSON(t, &e)
	require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), e.Data.ReceivedAt, "otherwise the server's clock")
	require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d2", deliveryJSON("d2", within)).Status)
}

// Spec 4.6: a tombstone may omit data and needs no valid data; stale data
// on it is dropped, not validated, and not part of the request's identity.
func TestTombstoneWithStaleData(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	a.put(key, "r1", "areas", "a1", "m1", area("Kitchen"))
	stale := map[string]any{"name": 42, "colour": "red"}
	r := a.ingest(key, "r1", "areas", "a1", "m2", snapshot("r1", "a1", "m2", 2, true, stale))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var e struct{ Data envelopeDoc }
	r.JSON(t, &e)
	require.True(t, e.Data.Deleted)
	require.Empty(t, e.Data.Data)
	again := a.ingest(key, "r1", "areas", "a1", "m2", snapshot("r1", "a1", "m2", 2, true, nil))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the same tombstone without its stale data is a replay")
	// A live record still needs valid data.
	requireProblem(t, a.ingest(key, "r1", "areas", "a2", "m3", snapshot("r1", "a2", "m3", 2, false, stale)), http.StatusBadRequest, "invalid-request")
}

// Spec 5.3: no Authorization header is a 401, whatever the query string.
func TestMissingCredentialsBeatBadQuery(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read"))
	requireProblem(t, a.get("/v1/restaurants?a=%zz"), http.StatusUnauthorized, "unauthorized")
	requireProblem(t, a.get("/v1/restaurants/r1/collections/areas/records?limit=%zz"), http.StatusUnauthorized, "unauthorized")
	requireProblem(t, a.getAs(key, "/v1/restaurants?a=%zz"), http.StatusBadRequest, "invalid-request")
}

// Spec 4.3: a delivery cursor is bound to the range, not to limit.
func TestDeliveryCursorKeepsAcrossLimits(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "deliveries:write"))
	for i := 1; i <= 5; i++ {
		require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d"+strconv.Itoa(i), deliveryJSON("d"+strconv.Itoa(i), int64(1000*i))).Status)
	}
	var page struct {
		Data       []struct{ ID string }
		NextCursor *string
	}
	a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=10000&limit=2").JSON(t, &page)
	require.Equal(t, "d5", page.Data[0].ID)
	cur := *page.NextCursor
	r := a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=10000&limit=3&cursor="+cur)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r.JSON(t, &page)
	require.Len(t, page.Data, 3)
	require.Equal(t, "d3", page.Data[0].ID)
	require.Nil(t, page.NextCursor)
	p := requireProblem(t, a.getAs(key, "/v1/restaurants/r1/deliveries?from=1&to=10000&limit=3&cursor="+cur), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "cursor", p.Errors[0].Parameter)
}

// Spec 9.1: every path is prefixed /v1; the document and docs are there
// too, their first addresses kept as aliases.
func TestDocumentationUnderV1(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	v1 := a.get("/v1/openapi.json")
	require.Equal(t, http.StatusOK, v1.Status)
	require.Equal(t, v1.Body, a.get("/openapi.json").Body)
	docs := a.get("/v1/docs")
	require.Equal(t, http.StatusOK, docs.Status)
	require.Contains(t, string(docs.Body), "/v1/openapi.json")
	require.Equal(t, http.StatusOK, a.get("/docs").Status)
}

// Spec 2.6 and 2.5: no control characters at all in objectKey and s3Key
// (C1 included), and no host at the start of an s3Key.
func TestFileKeysRules(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write"))
	file := func(s3Key, objectKey string) map[string]any {
		return map[string]any{"s3Key": s3Key, "name": "n", "sizeBytes": 1, "asset": map[string]any{"objectKey": objectKey, "status": "pending"}}
	}
	i := 0
	ingest := func(data map[string]any) response {
		i++
		m := "m" + strconv.Itoa(i)
		return a.ingest(key, "r1", "drive-files", "f"+strconv.Itoa(i), m, snapshot("r1", "f"+strconv.Itoa(i), m, 1, false, data))
	}
	for name, tc := range map[string]struct {
		s3Key, objectKey, pointer string
	}{
		"C1 control in objectKey": {"k", "k\u0085ey", "/data/asset/objectKey"},
		"DEL in objectKey":        {"k", "k\u007fey", "/data/asset/objectKey"},
		"C1 control in s3Key":     {"k\u009fey", "k", "/data/s3Key"},
		"domain first":            {"example.com/plan.pdf", "k", "/data/s3Key"},
		"localhost first":         {"localhost/plan.pdf", "k", "/data/s3Key"},
		"IPv4 first":              {"10.0.0.1/plan.pdf", "k", "/data/s3Key"},
		"host and port first":     {"files:9000/plan.pdf", "k", "/data/s3Key"},
		"scheme":                  {"s3://bucket/plan.pdf", "k", "/data/s3Key"},
		"leading slash":           {"/plan.pdf", "k", "/data/s3Key"},
	} {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, ingest(file(tc.s3Key, tc.objectKey)), http.StatusBadRequest, "invalid-request")
			require.Equal(t, tc.pointer, p.Errors[0].Pointer, "%+v", p.Errors)
		})
	}
	for _, ok := range []string{"plan.pdf", "drive/demo-bistro/haccp-plan.pdf", "reports.2024/plan.pdf", "a.b/c", "ünïcode/ﬁle.pdf"} {
		require.Equal(t, http.StatusOK, ingest(file(ok, ok)).Status, ok)
	}
}
