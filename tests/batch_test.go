package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
)

func batchPath(restaurant string) string { return "/v1/ingest/restaurants/" + restaurant + "/batch" }

// batchResultDoc is one item's answer as a client decodes it.
type batchResultDoc struct {
	Index         int             `json:"index"`
	Status        int             `json:"status"`
	Replayed      *bool           `json:"replayed"`
	ReplayedState string          `json:"replayedState"`
	Data          json.RawMessage `json:"data"`
	Problem       *problemDoc     `json:"problem"`
}

// postBatch sends a batch body as given (any JSON value).
func (a *app) postBatch(key, restaurant string, body any) response {
	a.t.Helper()
	return a.postRawBatch(key, restaurant, mustJSON(a.t, body))
}

func (a *app) postRawBatch(key, restaurant string, body []byte) response {
	a.t.Helper()
	return a.do(req{Method: http.MethodPost, Path: batchPath(restaurant), Body: strings.NewReader(string(body)),
		Header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}})
}

// batch sends items and requires a 200 with one answer per item, in
// order.
func (a *app) batch(key, restaurant string, items []any) []batchResultDoc {
	a.t.Helper()
	r := a.postBatch(key, restaurant, map[string]any{"items": items})
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var out struct{ Data []batchResultDoc }
	r.JSON(a.t, &out)
	require.Len(a.t, out.Data, len(items))
	for i, d := range out.Data {
		require.Equal(a.t, i, d.Index)
	}
	return out.Data
}

func snapshotItem(collection string, body map[string]any) map[string]any {
	return map[string]any{"collection": collection, "snapshot": body}
}

func deliveryItem(body map[string]any) map[string]any {
	return map[string]any{"collection": "deliveries", "delivery": body}
}

// reading is a valid temperature-readings snapshot of record id.
func reading(restaurant, id, mutation string, value float64) map[string]any {
	return snapshot(restaurant, id, mutation, 1_700_000_000_000, false, map[string]any{
		"timestamp": "1700000000000", "value": value, "unit": "°C", "equipmentId": "equipment-1"})
}

// shiftQueue is what a device holds after a shift offline: n readings
// and some deliveries, as batch items.
func shiftQueue(restaurant, prefix string, n, deliveries int) []any {
	items := make([]any, 0, n+deliveries)
	for i := range n {
		items = append(items, snapshotItem("temperature-readings", reading(restaurant, fmt.Sprintf("%s-r%03d", prefix, i), fmt.Sprintf("%s-m%03d", prefix, i), float64(i%40)/10)))
	}
	for i := range deliveries {
		items = append(items, deliveryItem(deliveryJSON(fmt.Sprintf("%s-d%d", prefix, i), 1_700_000_000_000+int64(i))))
	}
	return items
}

// streamHeads is GET /v1/changes's streams and heads: what any write moves.
func (a *app) streamHeads(key string) string {
	a.t.Helper()
	r := a.getAs(key, "/v1/changes?limit=100")
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var page struct {
		Data []struct{ RestaurantID, Stream, Head string }
	}
	r.JSON(a.t, &page)
	return fmt.Sprint(page.Data)
}

func defaultRateLimit(t testing.TB) int {
	t.Helper()
	c, err := config.LoadFrom(map[string]string{})
	require.NoError(t, err)
	return c.RateLimit
}

// A shift's queue (500 snapshots and 5 deliveries) drains in two batches
// under the default budget, with no 429; sent again, every item answers
// replayed and nothing changes.
func TestBatchDrainsAShiftQueue(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(defaultRateLimit(t)))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read", "deliveries:write", "deliveries:read"))
	queue := shiftQueue("r1", "shift", 500, 5)
	batches := [][]any{queue[:500], queue[500:]}

	var first [][]batchResultDoc
	start := time.Now()
	for _, b := range batches {
		res := a.batch(key, "r1", b)
		for _, r := range res {
			require.Equal(t, http.StatusOK, r.Status, "item %d: %+v", r.Index, r.Problem)
			require.False(t, *r.Replayed)
		}
		first = append(first, res)
	}
	// What docs/performance.md quotes; not asserted (no timing is).
	t.Logf("drained 500 snapshots and 5 deliveries in %d batch requests in %s", len(batches), time.Since(start).Round(time.Millisecond))
	var page walkPage
	r := a.getAs(key, recordsPath("r1", "temperature-readings")+"?limit=100")
	r.JSON(t, &page)
	require.Len(t, page.Data, 100)
	require.Equal(t, "shift-r000", page.Data[0].ID, "applied in array order")
	require.Equal(t, "1", page.Data[0].Sequence)
	heads := a.streamHeads(key)
	require.Contains(t, heads, "{r1 temperature-readings 500}")
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants/r1/deliveries/shift-d4").Status)

	for i, b := range batches {
		res := a.batch(key, "r1", b)
		for j, r := range res {
			require.Equal(t, http.StatusOK, r.Status, "item %d: %+v", r.Index, r.Problem)
			require.True(t, *r.Replayed, "item %d of batch %d", j, i)
			require.JSONEq(t, string(first[i][j].Data), string(r.Data), "a replay answers what the first answer said")
		}
	}
	require.Equal(t, heads, a.streamHeads(key), "a resent batch changes nothing")
}

// One invalid snapshot, one mutationId reused for another body, one
// collection the key cannot write, a snapshot from a clock far ahead, a
// reading and a delivery from before the restaurant's enablement (no
// backfill): each answers its single PUT's problem, and every other item
// is applied.
func TestBatchMixedItems(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	enabled := time.UnixMilli(1_650_000_000_000)
	_, err := a.store().RestaurantAdd(context.Background(), "r1", store.RestaurantChange{EnabledAt: &enabled})
	require.NoError(t, err)
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read", "deliveries:write", "deliveries:read"))
	a.put(key, "r1", "temperature-readings", "t-old", "m-old", reading("r1", "t-old", "m-old", 1)["data"])

	bad := reading("r1", "t-bad", "m-bad", 2)
	bad["data"].(map[string]any)["value"] = "warm"
	ahead := reading("r1", "t-ahead", "m-ahead", 3)
	ahead["capturedAt"] = "4102444800000" // 2100
	backfill := snapshot("r1", "t-backfill", "m-backfill", 1_600_000_000_000, false, reading("r1", "", "", 5)["data"])
	items := []any{
		snapshotItem("temperature-readings", reading("r1", "t-0", "m-0", 0)),
		snapshotItem("temperature-readings", bad),
		snapshotItem("temperature-readings", reading("r1", "t-old", "m-old", 9)), // m-old named another body
		snapshotItem("areas", snapshot("r1", "a-1", "m-a1", 1_700_000_000_000, false, area("Kitchen"))),
		snapshotItem("temperature-readings", ahead),
		deliveryItem(deliveryJSON("d-1", 1_700_000_000_000)),
		snapshotItem("temperature-readings", reading("r1", "t-1", "m-1", 1)),
		snapshotItem("temperature-readings", reading("r1", "t-0", "m-0", 0)), // the first item again: a replay
		snapshotItem("temperature-readings", backfill),
		deliveryItem(deliveryJSON("d-old", 1_600_000_000_000)),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(a.logs.String())
		}
	})
	res := a.batch(key, "r1", items)
	statuses := make([]int, len(res))
	for i, r := range res {
		statuses[i] = r.Status
	}
	require.Equal(t, []int{200, 400, 409, 403, 400, 200, 200, 200, 400, 400}, statuses)

	require.Equal(t, "invalid-request", res[1].Problem.suffix())
	require.Equal(t, "/items/1/snapshot/data/value", res[1].Problem.Errors[0].Pointer)
	require.Equal(t, batchPath("r1"), res[1].Problem.Instance)
	require.Equal(t, "conflict", res[2].Problem.suffix())
	require.Equal(t, "forbidden", res[3].Problem.suffix())
	require.Equal(t, "/items/4/snapshot/capturedAt", res[4].Problem.Errors[0].Pointer)
	require.Equal(t, "/items/8/snapshot/capturedAt", res[8].Problem.Errors[0].Pointer)
	require.Contains(t, res[8].Problem.Errors[0].Detail, "backfill")
	require.Equal(t, "/items/9/delivery/occurredAt", res[9].Problem.Errors[0].Pointer)
	require.False(t, *res[0].Replayed)
	require.True(t, *res[7].Replayed, "an item repeated later in the batch replays")
	for _, i := range []int{1, 2, 3, 4, 8, 9} {
		require.Nil(t, res[i].Replayed)
		require.Empty(t, res[i].Data)
	}

	for id, want := range map[string]int{"t-0": 200, "t-1": 200, "t-bad": 404, "t-ahead": 404, "t-backfill": 404} {
		require.Equal(t, want, a.getAs(key, "/v1/restaurants/r1/collections/temperature-readings/records/"+id).Status, id)
	}
	var old envelopeDoc
	a.getAs(key, "/v1/restaurants/r1/collections/temperature-readings/records/t-old").JSON(t, &old)
	require.JSONEq(t, `{"timestamp":"1700000000000","value":1,"unit":"°C","equipmentId":"equipment-1"}`, string(old.Data), "the conflicting item changed nothing")
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants/r1/deliveries/d-1").Status)
}

// A batch that is not one is refused whole with a problem, and nothing of
// it is applied.
func TestBatchMalformed(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.MaxBatchBytes = 256 << 10 }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	good := snapshotItem("temperature-readings", reading("r1", "t-0", "m-0", 0))
	withItems := func(items ...any) []byte { return mustJSON(t, map[string]any{"items": append([]any{}, items...)}) }
	many := make([]any, 501)
	for i := range many {
		many[i] = good
	}
	big := reading("r1", "t-big", "m-big", 1)
	big["data"].(map[string]any)["equipmentId"] = strings.Repeat("x", 300<<10)

	for name, c := range map[string]struct {
		body    []byte
		status  int
		pointer string
	}{
		"not JSON":              {[]byte(`{"items": [`), 400, ""},
		"an array":              {[]byte(`[]`), 400, ""},
		"items missing":         {[]byte(`{}`), 400, "/items"},
		"zero items":            {withItems(), 400, "/items"},
		"501 items":             {withItems(many...), 400, "/items"},
		"another member":        {[]byte(`{"items":[],"atomic":true}`), 400, "/atomic"},
		"a duplicate member":    {[]byte(`{"items":[],"items":[]}`), 400, ""},
		"items null":            {[]byte(`{"items":null}`), 400, ""},
		"unknown collection":    {withItems(good, map[string]any{"collection": "recipes", "snapshot": reading("r1", "x", "y", 1)}), 400, "/items/1/collection"},
		"collection not a name": {withItems(map[string]any{"collection": 7, "snapshot": reading("r1", "x", "y", 1)}), 400, "/items/0/collection"},
		"no collection":         {withItems(map[string]any{"snapshot": reading("r1", "x", "y", 1)}), 400, "/items/0/collection"},
		"no snapshot":           {withItems(map[string]any{"collection": "temperature-readings"}), 400, "/items/0"},
		"a delivery as snapshot": {withItems(map[string]any{"collection": "deliveries", "snapshot": deliveryJSON("d", 1)}), 400,
			"/items/0"},
		"an item not an object": {withItems(good, "x"), 400, ""},
		"over the byte limit":   {withItems(good, snapshotItem("temperature-readings", big)), 413, ""},
	} {
		t.Run(name, func(t *testing.T) {
			r := a.postRawBatch(key, "r1", c.body)
			p := requireProblem(t, r, c.status, map[int]string{400: "invalid-request", 413: "payload-too-large"}[c.status])
			if c.pointer != "" {
				require.NotEmpty(t, p.Errors, "%s", r.Body)
				require.Equal(t, c.pointer, p.Errors[0].Pointer, "%s", r.Body)
			}
		})
	}
	r := a.do(req{Method: http.MethodPost, Path: batchPath("r1"), Body: strings.NewReader(string(withItems(good))),
		Header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "text/plain"}})
	requireProblem(t, r, 400, "invalid-request")
	require.Equal(t, http.StatusNotFound, a.getAs(key, "/v1/restaurants/r1/collections/temperature-readings/records/t-0").Status,
		"no malformed batch applied its good item")
	// Each item is still held to the single PUT's limit.
	a2 := newApp(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = 4096 }))
	a2.addRestaurants("r1")
	k2 := a2.newKey(grant("r1", "temperature-readings:write"))
	long := reading("r1", "t-long", "m-long", 1)
	long["data"].(map[string]any)["equipmentId"] = strings.Repeat("x", 5000)
	res := a2.batch(k2, "r1", []any{snapshotItem("temperature-readings", long), good})
	require.Equal(t, 413, res[0].Status)
	require.Equal(t, 200, res[1].Status)
}

// At 60 requests a minute, five batches of 500 fit in one minute (each
// costs 10); a batch that does not fit the budget left is refused whole,
// applying nothing and spending only the request that carried it.
func TestBatchBudget(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(60))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	for b := range 5 {
		r := a.postBatch(key, "r1", map[string]any{"items": shiftQueue("r1", fmt.Sprintf("b%d", b), 500, 0)})
		require.Equal(t, http.StatusOK, r.Status, "batch %d: %s", b, r.Body)
		requireRateHeaders(t, r, 60, 60-10*(b+1))
	}
	for range 5 {
		require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
	}
	// 5 left: a batch of 500 costs 10.
	r := a.postBatch(key, "r1", map[string]any{"items": shiftQueue("r1", "late", 500, 0)})
	requireProblem(t, r, http.StatusTooManyRequests, "rate-limit-exceeded")
	require.Equal(t, 4, headerInt(t, r, "X-RateLimit-Remaining"), "the budget left, less the request that carried the batch")
	retry := headerInt(t, r, "Retry-After")
	require.True(t, retry >= 1 && retry <= 60, "Retry-After in whole seconds: %d", retry)
	require.Contains(t, r.problem(t).Detail, "costs 10 requests")
	require.Equal(t, http.StatusNotFound, a.getAs(key, "/v1/restaurants/r1/collections/temperature-readings/records/late-r000").Status,
		"a refused batch applies nothing")
	// The refused batch spent one request, the GET above another: 3 left,
	// enough for a batch of 150.
	r = a.postBatch(key, "r1", map[string]any{"items": shiftQueue("r1", "small", 150, 0)})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	requireRateHeaders(t, r, 60, 0)
}

// A device's session token with write scopes sends batches; items outside
// its narrowed scopes answer 403 each.
func TestBatchWithSessionToken(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	device := a.newKey(grant("r1", "temperature-readings:write", "areas:write", "deliveries:write"))
	r := a.openSession(device, map[string]any{"restaurantId": "r1", "scopes": []string{"temperature-readings:write", "deliveries:write"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var s sessionDoc
	r.JSON(t, &s)
	res := a.batch(s.AccessToken, "r1", []any{
		snapshotItem("temperature-readings", reading("r1", "t-0", "m-0", 0)),
		snapshotItem("areas", snapshot("r1", "a-1", "m-a1", 1_700_000_000_000, false, area("Kitchen"))),
		deliveryItem(deliveryJSON("d-1", 1_700_000_000_000)),
	})
	require.Equal(t, []int{200, 403, 200}, []int{res[0].Status, res[1].Status, res[2].Status})
	// Not granted there: the one 404 of the route, as for a single PUT.
	a.addRestaurants("r2")
	requireProblem(t, a.postBatch(s.AccessToken, "r2", map[string]any{"items": []any{}}), 404, "not-found")
}

// A batch cut mid-way (the client gives up while the service applies it)
// leaves some items applied; sent again whole, every item is answered 200,
// those applied as replays, and each of the 500 is applied exactly once.
func TestBatchResentAfterACut(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	items := shiftQueue("r1", "cut", 500, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL+batchPath("r1"),
		strings.NewReader(string(mustJSON(t, map[string]any{"items": items}))))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+key)
	hr.Header.Set("Content-Type", "application/json")
	if res, err := a.srv.Client().Do(hr); err == nil {
		res.Body.Close() // answered within the timeout: everything applied, still a valid start
	}

	res := a.batch(key, "r1", items)
	replayed := 0
	for _, r := range res {
		require.Equal(t, http.StatusOK, r.Status, "item %d: %+v", r.Index, r.Problem)
		if *r.Replayed {
			replayed++
		}
	}
	t.Logf("%d of 500 items were applied before the cut", replayed)
	require.Contains(t, a.streamHeads(key), "{r1 temperature-readings 500}", "each item applied once: 500 changes in all")
}
