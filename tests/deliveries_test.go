package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// deliveryJSON is a complete valid delivery body.
func deliveryJSON(id string, occurredAt int64) map[string]any {
	return map[string]any{
		"id":          id,
		"occurredAt":  strconv.FormatInt(occurredAt, 10),
		"isCompliant": false,
		"supplier":    map[string]any{"id": "sup-1", "name": "Fresh Farm Ltd"},
		"temperatureRecords": []any{
			map[string]any{"product": "Chicken breast", "lotNumber": "L-2211", "unit": "°C", "value": 3.5},
			map[string]any{"product": "Yoghurt", "lotNumber": "Y-9", "unit": "celsius", "value": -1},
		},
		"nonComplianceReasons": []any{"Packaging damaged"},
		"correctiveActions":    []any{"Refused one crate"},
		"commentary":           "Driver late",
		"imageCount":           2,
	}
}

// seedDelivery stores a delivery directly (fast), as the ingest path would.
func (a *app) seedDelivery(restaurant, id string, occurredAt int64) {
	a.t.Helper()
	d := wire.Delivery{
		ID: id, RestaurantID: restaurant, OccurredAt: wire.Millis(occurredAt),
		Supplier:             wire.Supplier{ID: "s1", Name: "Supplier"},
		TemperatureRecords:   []wire.TemperatureRecord{},
		NonComplianceReasons: []string{}, CorrectiveActions: []string{},
	}
	digest, err := d.ContentDigest()
	require.NoError(a.t, err)
	_, _, err = a.store().DeliveryCreate(context.Background(), d, digest)
	require.NoError(a.t, err)
}

type deliveryPage struct {
	Data       []wire.Delivery `json:"data"`
	NextCursor *string         `json:"nextCursor"`
}

func deliveriesPath(restaurant string, q url.Values) string {
	return "/v1/restaurants/" + restaurant + "/deliveries?" + q.Encode()
}

func window(from, to int64, limit int) url.Values {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}, "to": {strconv.FormatInt(to, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// walkDeliveries follows nextCursor to the end, returning every page.
func (a *app) walkDeliveries(key, restaurant string, q url.Values) []deliveryPage {
	a.t.Helper()
	var pages []deliveryPage
	for {
		r := a.getAs(key, deliveriesPath(restaurant, q))
		require.Equal(a.t, http.StatusOK, r.Status, "body: %s", r.Body)
		var p deliveryPage
		r.JSON(a.t, &p)
		pages = append(pages, p)
		if p.NextCursor == nil {
			return pages
		}
		require.NotEmpty(a.t, p.Data, "never an empty page before the end")
		q.Set("cursor", *p.NextCursor)
		require.Less(a.t, len(pages), 10000, "walk does not terminate")
	}
}

func TestDeliveryWalkWithTies(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "deliveries:read"))
	const base = int64(1_700_000_000_000)
	// 1,000 deliveries on 50 distinct instants: 20-way ties everywhere.
	want := make([]wire.Delivery, 0, 1000)
	for i := 0; i < 1000; i++ {
		occ := base + int64(i%50)*60_000
		id := fmt.Sprintf("d-%03d-%x", i, i*7919%1000)
		a.seedDelivery("r1", id, occ)
		want = append(want, wire.Delivery{ID: id, OccurredAt: wire.Millis(occ)})
	}
	a.seedDelivery("r2", "other-restaurant", base) // never in r1's walk
	slices.SortFunc(want, func(x, y wire.Delivery) int {
		if x.OccurredAt != y.OccurredAt {
			return int(y.OccurredAt - x.OccurredAt)
		}
		return strings.Compare(y.ID, x.ID)
	})

	pages := a.walkDeliveries(key, "r1", window(base, base+49*60_000, 7))
	require.Len(t, pages, 143) // ceil(1000/7)
	var got []wire.Delivery
	for i, p := range pages {
		if i < len(pages)-1 {
			require.Len(t, p.Data, 7)
		}
		got = append(got, p.Data...)
	}
	require.Len(t, pages[len(pages)-1].Data, 1000%7)
	require.Len(t, got, 1000)
	seen := map[string]bool{}
	for i, d := range got {
		require.False(t, seen[d.ID], "delivery %s returned twice", d.ID)
		seen[d.ID] = true
		require.Equal(t, want[i].ID, d.ID, "position %d: newest first, ties by id descending", i)
		require.Equal(t, "r1", d.RestaurantID)
	}
}

func TestDeliveryWindowBoundaries(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	const from, to = int64(1_000_000), int64(2_000_000)
	a.seedDelivery("r1", "before", from-1)
	a.seedDelivery("r1", "at-from", from)
	a.seedDelivery("r1", "inside", from+500)
	a.seedDelivery("r1", "at-to", to)
	a.seedDelivery("r1", "after", to+1)

	pages := a.walkDeliveries(key, "r1", window(from, to, 0))
	require.Len(t, pages, 1)
	var ids []string
	for _, d := range pages[0].Data {
		ids = append(ids, d.ID)
	}
	require.Equal(t, []string{"at-to", "inside", "at-from"}, ids, "both ends inclusive")

	// from == to is a valid one-instant window.
	pages = a.walkDeliveries(key, "r1", window(to, to, 0))
	require.Len(t, pages[0].Data, 1)

	// The widest window, exactly 366 days, is accepted.
	require.Equal(t, http.StatusOK, a.getAs(key, deliveriesPath("r1", window(0, 366*24*3600*1000, 0))).Status)
	// An empty window answers an empty page and no cursor.
	r := a.getAs(key, deliveriesPath("r1", window(5, 6, 0)))
	require.JSONEq(t, `{"data":[],"nextCursor":null}`, string(r.Body))
}

// When the last page is exactly full, it already says so: no empty
// trailing page.
func TestDeliveryLastPageExactlyFull(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	for i := 0; i < 14; i++ {
		a.seedDelivery("r1", fmt.Sprintf("d%02d", i), int64(1000+i))
	}
	pages := a.walkDeliveries(key, "r1", window(0, 5000, 7))
	require.Len(t, pages, 2)
	require.Len(t, pages[0].Data, 7)
	require.NotNil(t, pages[0].NextCursor)
	require.Len(t, pages[1].Data, 7)
	require.Nil(t, pages[1].NextCursor)

	// The default limit is 50.
	for i := 14; i < 60; i++ {
		a.seedDelivery("r1", fmt.Sprintf("d%02d", i), int64(1000+i))
	}
	pages = a.walkDeliveries(key, "r1", window(0, 5000, 0))
	require.Len(t, pages[0].Data, 50)
	require.Len(t, pages[1].Data, 10)
}

// Spec 4.3.4: poll with the newest stored occurredAt minus an hour as the
// next from, and deduplicate on id. A delivery a device uploads late (it
// occurred before the newest one seen) is caught; starting the next window
// just after the newest one would miss it.
func TestDeliveryIncrementalPollingCatchesLateArrival(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	const hour = int64(3_600_000)
	t0 := int64(1_750_000_000_000)
	a.seedDelivery("r1", "early", t0)
	a.seedDelivery("r1", "newest", t0+5*hour)

	stored := map[string]wire.Delivery{}
	poll := func(from, to int64) (newest int64, fetched int) {
		for _, p := range a.walkDeliveries(key, "r1", window(from, to, 2)) {
			for _, d := range p.Data {
				stored[d.ID] = d // dedupe on id
				fetched++
				newest = max(newest, int64(d.OccurredAt))
			}
		}
		return newest, fetched
	}
	newest, _ := poll(t0-24*hour, t0+6*hour)
	require.Equal(t, t0+5*hour, newest)
	require.Len(t, stored, 2)

	// An offline device now uploads a delivery that occurred 30 minutes
	// before the newest one already seen.
	a.seedDelivery("r1", "late", t0+5*hour-hour/2)
	a.seedDelivery("r1", "fresh", t0+7*hour)

	naive := a.walkDeliveries(key, "r1", window(newest+1, t0+8*hour, 0))
	require.NotContains(t, idsOf(naive), "late", "a window starting after the newest seen misses the late upload")

	_, fetched := poll(newest-hour, t0+8*hour)
	require.Equal(t, 3, fetched, "the overlap re-reads `newest`, which dedupe absorbs")
	require.Contains(t, stored, "late")
	require.Contains(t, stored, "fresh")
	require.Len(t, stored, 4)
}

func idsOf(pages []deliveryPage) []string {
	var out []string
	for _, p := range pages {
		for _, d := range p.Data {
			out = append(out, d.ID)
		}
	}
	return out
}

func TestDeliveryListInputErrors(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	const day = int64(24 * 3600 * 1000)
	cases := map[string]struct {
		query string
		param string
	}{
		"missing from":             {"to=10", "from"},
		"missing to":               {"from=10", "to"},
		"missing both":             {"", "from"},
		"empty from":               {"from=&to=10", "from"},
		"non-digits":               {"from=abc&to=10", "from"},
		"decimal":                  {"from=1.5&to=10", "from"},
		"iso date":                 {"from=2026-01-01&to=10", "from"},
		"leading zero":             {"from=01&to=10", "from"},
		"plus sign":                {"from=%2B1&to=10", "from"},
		"minus sign":               {"from=-1&to=10", "from"},
		"space":                    {"from=%201&to=10", "from"},
		"20 digits":                {"from=1&to=10000000000000000000", "to"},
		"beyond int64":             {"from=1&to=9223372036854775808", "to"},
		"inverted range":           {"from=11&to=10", "to"},
		"366 days + 1ms":           {fmt.Sprintf("from=0&to=%d", 366*day+1), "to"},
		"limit 0":                  {"from=0&to=10&limit=0", "limit"},
		"limit 101":                {"from=0&to=10&limit=101", "limit"},
		"limit abc":                {"from=0&to=10&limit=abc", "limit"},
		"limit negative":           {"from=0&to=10&limit=-1", "limit"},
		"limit leading zero":       {"from=0&to=10&limit=07", "limit"},
		"limit empty":              {"from=0&to=10&limit=", "limit"},
		"limit decimal":            {"from=0&to=10&limit=1.0", "limit"},
		"repeated from":            {"from=0&from=1&to=10", "from"},
		"cursor garbage":           {"from=0&to=10&cursor=hello", "cursor"},
		"cursor empty":             {"from=0&to=10&cursor=", "cursor"},
		"cursor not base64url":     {"from=0&to=10&cursor=%2F%2F%2F%2F", "cursor"},
		"cursor with padding char": {"from=0&to=10&cursor=AAAA%3D", "cursor"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := a.getAs(key, "/v1/restaurants/r1/deliveries?"+tc.query)
			p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
			require.NotEmpty(t, p.Errors, "names the parameter")
			require.Equal(t, tc.param, p.Errors[0].Parameter)
			require.Contains(t, p.Detail, tc.param)
		})
	}
	// Largest storable values and unknown parameters are fine.
	r := a.getAs(key, "/v1/restaurants/r1/deliveries?from=9223372036854775807&to=9223372036854775807&sort=asc&x=1")
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	r = a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=0&limit=100")
	require.Equal(t, http.StatusOK, r.Status)
	r = a.getAs(key, "/v1/restaurants/r1/deliveries?from=0&to=0&limit=1")
	require.Equal(t, http.StatusOK, r.Status)
}

// A cursor only continues the walk it came from.
func TestDeliveryCursorBinding(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "deliveries:read"), grant("r2", "deliveries:read"))
	for i := 0; i < 5; i++ {
		a.seedDelivery("r1", fmt.Sprintf("a%d", i), int64(100+i))
		a.seedDelivery("r2", fmt.Sprintf("b%d", i), int64(100+i))
	}
	first := a.walkDeliveries(key, "r1", window(0, 1000, 2))[0]
	require.NotNil(t, first.NextCursor)
	cur := *first.NextCursor

	withCursor := func(q url.Values, c string) url.Values {
		q.Set("cursor", c)
		return q
	}
	// The untouched continuation works, and so does one with another limit:
	// the cursor is bound to the range only (spec 4.3).
	require.Equal(t, http.StatusOK, a.getAs(key, deliveriesPath("r1", withCursor(window(0, 1000, 2), cur))).Status)
	require.Equal(t, http.StatusOK, a.getAs(key, deliveriesPath("r1", withCursor(window(0, 1000, 3), cur))).Status)
	require.Equal(t, http.StatusOK, a.getAs(key, deliveriesPath("r1", withCursor(window(0, 1000, 0), cur))).Status)

	bad := map[string]string{
		"other from":       deliveriesPath("r1", withCursor(window(1, 1000, 2), cur)),
		"other to":         deliveriesPath("r1", withCursor(window(0, 999, 2), cur)),
		"other restaurant": deliveriesPath("r2", withCursor(window(0, 1000, 2), cur)),
		"truncated":        deliveriesPath("r1", withCursor(window(0, 1000, 2), cur[:len(cur)-3])),
		"tampered":         deliveriesPath("r1", withCursor(window(0, 1000, 2), flipChar(cur, len(cur)/2))),
		"tampered start":   deliveriesPath("r1", withCursor(window(0, 1000, 2), flipChar(cur, 0))),
		"extended":         deliveriesPath("r1", withCursor(window(0, 1000, 2), cur+"AA")),
	}
	for name, path := range bad {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, a.getAs(key, path), http.StatusBadRequest, "invalid-request")
			require.Equal(t, "cursor", p.Errors[0].Parameter)
		})
	}
}

// flipChar changes one base64url character of s.
func flipChar(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestDeliveryGet(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "deliveries:write"))
	body := deliveryJSON("del-1", 1_700_000_000_123)
	put := a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/del-1", body)
	require.Equal(t, http.StatusOK, put.Status, "body: %s", put.Body)

	r := a.getAs(key, "/v1/restaurants/r1/deliveries/del-1")
	require.Equal(t, http.StatusOK, r.Status)
	// receivedAt is the service's clock (TestDeliveryReceivedAtShowsLateUploads
	// checks it); the rest is what was sent.
	var got map[string]any
	r.JSON(t, &got)
	require.Regexp(t, `^[0-9]{13}$`, got["receivedAt"])
	delete(got, "receivedAt")
	require.JSONEq(t, `{
		"id":"del-1","restaurantId":"r1","occurredAt":"1700000000123","isCompliant":false,
		"supplier":{"id":"sup-1","name":"Fresh Farm Ltd"},
		"temperatureRecords":[
			{"product":"Chicken breast","lotNumber":"L-2211","unit":"°C","value":3.5},
			{"product":"Yoghurt","lotNumber":"Y-9","unit":"celsius","value":-1}],
		"nonComplianceReasons":["Packaging damaged"],"correctiveActions":["Refused one crate"],
		"commentary":"Driver late","imageCount":2}`, string(mustJSON(t, got)), "a bare Delivery, units as given")

	for _, id := range []string{"nope", "has%20space", strings.Repeat("x", 201)} {
		requireProblem(t, a.getAs(key, "/v1/restaurants/r1/deliveries/"+id), http.StatusNotFound, "not-found")
	}
}

// putJSON sends a PUT with a JSON body and the key. Like do, it may be
// called from any goroutine: a body that does not marshal is reported with
// Errorf and answers a zero response.
func (a *app) putJSON(key, path string, body any, kv ...string) response {
	a.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		a.t.Errorf("PUT %s: marshalling the body: %v", path, err)
		return response{}
	}
	return a.putRaw(key, path, "application/json", b, kv...)
}

func (a *app) putRaw(key, path, contentType string, body []byte, kv ...string) response {
	a.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	if contentType != "" {
		h["Content-Type"] = contentType
	}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return a.do(req{Method: http.MethodPut, Path: path, Header: h, Body: bytes.NewReader(body)})
}

func TestDeliveryIngest(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "deliveries:write"))
	path := "/v1/ingest/restaurants/r1/deliveries/del-1"

	first := a.putJSON(key, path, deliveryJSON("del-1", 1000))
	require.Equal(t, http.StatusOK, first.Status, "body: %s", first.Body)
	require.Empty(t, first.Header.Get("Idempotent-Replayed"))
	var created struct{ Data wire.Delivery }
	first.JSON(t, &created)
	require.Equal(t, "r1", created.Data.RestaurantID, "restaurantId may be omitted; the path supplies it")

	again := a.putJSON(key, path, deliveryJSON("del-1", 1000))
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))

	// The same numbers written differently are the same content.
	sameValues := []byte(strings.Replace(string(mustJSON(t, deliveryJSON("del-1", 1000))), `"value":3.5`, `"value":3.50`, 1))
	require.Contains(t, string(sameValues), "3.50")
	require.Equal(t, "true", a.putRaw(key, path, "application/json", sameValues).Header.Get("Idempotent-Replayed"))

	// With restaurantId present and equal to the path: same content.
	withRestaurant := deliveryJSON("del-1", 1000)
	withRestaurant["restaurantId"] = "r1"
	require.Equal(t, "true", a.putJSON(key, path, withRestaurant).Header.Get("Idempotent-Replayed"))

	changed := deliveryJSON("del-1", 1000)
	changed["isCompliant"] = true
	requireProblem(t, a.putJSON(key, path, changed), http.StatusConflict, "conflict")

	// Nothing changed by the refused write.
	r := a.getAs(key, "/v1/restaurants/r1/deliveries/del-1")
	require.Contains(t, string(r.Body), `"isCompliant":false`)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestDeliveryIngestRejects(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = 64 << 10 }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "deliveries:write"))
	path := "/v1/ingest/restaurants/r1/deliveries/del-1"

	mutate := func(f func(m map[string]any)) []byte {
		m := deliveryJSON("del-1", 1000)
		f(m)
		return mustJSON(t, m)
	}
	cases := map[string]struct {
		body    []byte
		pointer string
	}{
		"id differs from path":  {mutate(func(m map[string]any) { m["id"] = "del-2" }), "/id"},
		"restaurant differs":    {mutate(func(m map[string]any) { m["restaurantId"] = "r2" }), "/restaurantId"},
		"unknown member":        {mutate(func(m map[string]any) { m["colour"] = "red" }), "/colour"},
		"nested unknown member": {mutate(func(m map[string]any) { m["supplier"].(map[string]any)["vat"] = "x" }), "/supplier/vat"},
		"missing member":        {mutate(func(m map[string]any) { delete(m, "supplier") }), "/supplier"},
		"wrong type":            {mutate(func(m map[string]any) { m["imageCount"] = "2" }), "/imageCount"},
		"negative count":        {mutate(func(m map[string]any) { m["imageCount"] = -1 }), "/imageCount"},
		"unsafe integer":        {mutate(func(m map[string]any) { m["imageCount"] = 9007199254740992 }), "/imageCount"},
		"timestamp number":      {mutate(func(m map[string]any) { m["occurredAt"] = 1000 }), "/occurredAt"},
		"timestamp 20 digits":   {mutate(func(m map[string]any) { m["occurredAt"] = "10000000000000000000" }), "/occurredAt"},
		"timestamp beyond db":   {mutate(func(m map[string]any) { m["occurredAt"] = "9999999999999999999" }), "/occurredAt"},
		"timestamp leading 0":   {mutate(func(m map[string]any) { m["occurredAt"] = "0100" }), "/occurredAt"},
		"bad supplier id":       {mutate(func(m map[string]any) { m["supplier"].(map[string]any)["id"] = "-x" }), "/supplier/id"},
		"10001-char commentary": {mutate(func(m map[string]any) { m["commentary"] = strings.Repeat("é", 10001) }), "/commentary"},
		"1001 reasons":          {mutate(func(m map[string]any) { m["nonComplianceReasons"] = make([]string, 1001) }), "/nonComplianceReasons"},
		"huge number":           {[]byte(strings.Replace(string(mutate(func(map[string]any) {})), `"value":3.5`, `"value":1e400`, 1)), "/temperatureRecords/0/value"},
		"tiny number":           {[]byte(strings.Replace(string(mutate(func(map[string]any) {})), `"value":3.5`, `"value":1e-20000`, 1)), "/temperatureRecords/0/value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := a.putRaw(key, path, "application/json", tc.body)
			p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
			var pointers []string
			for _, e := range p.Errors {
				pointers = append(pointers, e.Pointer)
			}
			require.Contains(t, pointers, tc.pointer, "errors: %+v", p.Errors)
		})
	}
	// Every violation is listed, not just the first.
	r := a.putRaw(key, path, "application/json", mutate(func(m map[string]any) {
		m["id"] = "other"
		m["extra"] = 1
		m["isCompliant"] = "no"
	}))
	p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	require.Len(t, p.Errors, 3, "%+v", p.Errors)

	for name, tc := range map[string]struct {
		contentType string
		body        string
	}{
		"not json":         {"application/json", `{"id":`},
		"array":            {"application/json", `[1,2]`},
		"string":           {"application/json", `"x"`},
		"trailing garbage": {"application/json", `{} {}`},
		"empty":            {"application/json", ``},
		"text/plain":       {"text/plain", `{}`},
		"no content type":  {"", `{}`},
		"form":             {"application/x-www-form-urlencoded", `a=1`},
		"latin1 charset":   {"application/json; charset=iso-8859-1", `{}`},
	} {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, a.putRaw(key, path, tc.contentType, []byte(tc.body)), http.StatusBadRequest, "invalid-request")
		})
	}
	p = requireProblem(t, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/-bad", deliveryJSON("-bad", 1)), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "deliveryId", p.Errors[0].Parameter)

	// Over the body limit: 413, whatever the content.
	big := mutate(func(m map[string]any) { m["commentary"] = strings.Repeat("x", 70<<10) })
	requireProblem(t, a.putRaw(key, path, "application/json", big), http.StatusRequestEntityTooLarge, "payload-too-large")

	// Nothing was stored by any refused request.
	requireProblem(t, a.getAs(key, "/v1/restaurants/r1/deliveries/del-1"), http.StatusNotFound, "not-found")

	// The boundaries themselves are accepted.
	ok := mutate(func(m map[string]any) {
		m["commentary"] = strings.Repeat("é", 10000)
		m["nonComplianceReasons"] = make([]string, 1000)
		m["occurredAt"] = strconv.FormatInt(time.Now().UnixMilli(), 10) // the latest: now
		m["imageCount"] = 9007199254740991
	})
	r = a.putRaw(key, path, "application/json", ok)
	require.Equal(t, http.StatusOK, r.Status, "body: %.500s", r.Body)
}

// Twenty identical PUTs racing: all succeed, exactly one is the original.
func TestDeliveryIngestRace(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:write"))
	body := mustJSON(t, deliveryJSON("race-1", 42))
	requireAppliedOnce(t, concurrently(20, func() response {
		return a.putRaw(key, "/v1/ingest/restaurants/r1/deliveries/race-1", "application/json", body)
	}))
}

// The 401/403/404 matrix of spec 5.3 with two restaurants and two keys:
// key A on restaurant B's paths answers exactly as for a restaurant that
// does not exist, and as for a delivery that does not exist.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("ra", "rb")
	keyA := a.newKey(grant("ra", "deliveries:read"))
	keyB := a.newKey(grant("rb", "deliveries:read", "deliveries:write"))
	a.seedDelivery("ra", "da", 10)
	a.seedDelivery("rb", "db", 10)
	list := func(r string) string { return "/v1/restaurants/" + r + "/deliveries?from=0&to=100" }
	one := func(r, d string) string { return "/v1/restaurants/" + r + "/deliveries/" + d }

	require.Equal(t, http.StatusOK, a.getAs(keyA, list("ra")).Status)
	require.Equal(t, http.StatusOK, a.getAs(keyA, one("ra", "da")).Status)
	require.Equal(t, http.StatusOK, a.getAs(keyB, one("rb", "db")).Status)

	shape := func(r response) string {
		p := requireProblem(t, r, http.StatusNotFound, "not-found")
		p.Instance, p.RequestID = "", ""
		return string(mustJSON(t, p))
	}
	reference := shape(a.getAs(keyA, one("ra", "missing")))
	for name, r := range map[string]response{
		"A lists B":                a.getAs(keyA, list("rb")),
		"A reads B's delivery":     a.getAs(keyA, one("rb", "db")),
		"A lists a nonexistent":    a.getAs(keyA, list("nowhere")),
		"A reads in nonexistent":   a.getAs(keyA, one("nowhere", "db")),
		"B reads A's delivery":     a.getAs(keyB, one("ra", "da")),
		"B writes into A":          a.putJSON(keyB, "/v1/ingest/restaurants/ra/deliveries/x", deliveryJSON("x", 1)),
		"A writes into B":          a.putJSON(keyA, "/v1/ingest/restaurants/rb/deliveries/x", deliveryJSON("x", 1)),
		"A lists B with bad range": a.getAs(keyA, "/v1/restaurants/rb/deliveries?from=9&to=1"),
	} {
		require.Equal(t, reference, shape(r), name)
	}
	// Missing scope with a grant for the restaurant: 403.
	p := requireProblem(t, a.putJSON(keyA, "/v1/ingest/restaurants/ra/deliveries/x", deliveryJSON("x", 1)), http.StatusForbidden, "forbidden")
	require.Contains(t, p.Detail, "deliveries:write")
	// Invalid credentials are 401 before anything else.
	requireProblem(t, a.getAs("fsk_zzzzzzzzzzzzzzzz."+secretOf(keyA), list("ra")), http.StatusUnauthorized, "unauthorized")
	// Audit rows carry the requested restaurant, granted or not.
	require.NoError(t, a.svc.Audit.Close(context.Background()))
	var n int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events WHERE restaurant_id = 'rb' AND key_public_id = $1 AND status = 404`, publicID(t, keyA)).Scan(&n))
	require.GreaterOrEqual(t, n, 3)
}
