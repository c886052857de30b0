package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
)

// deliveryChangesDoc is a page of GET .../delivery-changes.
type deliveryChangesDoc struct {
	Data []struct {
		ID         string `json:"id"`
		OccurredAt string `json:"occurredAt"`
	} `json:"data"`
	NextCursor    *string `json:"nextCursor"`
	ChangesCursor *string `json:"changesCursor"`
}

func (d deliveryChangesDoc) ids() []string {
	out := []string{}
	for _, x := range d.Data {
		out = append(out, x.ID)
	}
	return out
}

func deliveryChangesPath(restaurant string, q url.Values) string {
	p := "/v1/restaurants/" + restaurant + "/delivery-changes"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// readDeliveryChanges reads from cursor (none: the beginning) to the last
// page, limit per page; it returns the ids in order and the changesCursor.
func (a *app) readDeliveryChanges(key, restaurant, cursor string, limit int) ([]string, string) {
	a.t.Helper()
	ids := []string{}
	for pages := 0; ; pages++ {
		require.Less(a.t, pages, 1000, "the pages end")
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := a.getAs(key, deliveryChangesPath(restaurant, q))
		require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
		var page deliveryChangesDoc
		r.JSON(a.t, &page)
		ids = append(ids, page.ids()...)
		if page.NextCursor == nil {
			require.NotNil(a.t, page.ChangesCursor, "the last page carries changesCursor")
			return ids, *page.ChangesCursor
		}
		require.Nil(a.t, page.ChangesCursor, "only the last page carries changesCursor")
		cursor = *page.NextCursor
	}
}

func (a *app) putDelivery(key, restaurant, id string, occurredAt time.Time) {
	a.t.Helper()
	r := a.putJSON(key, "/v1/ingest/restaurants/"+restaurant+"/deliveries/"+id, deliveryJSON(id, occurredAt.UnixMilli()))
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
}

// The delivery changes cursor returns deliveries in the order they were
// received, whatever their occurredAt: one checked three days ago and
// uploaded after the previous poll comes on the next poll, which the
// occurredAt window with the spec's one-hour overlap would never show.
// Replays add nothing; pages of any size see each delivery once.
func TestDeliveryChangesInReceiveOrder(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	write := a.newKey(grant("r1", catalog.DeliveriesWrite), grant("r2", catalog.DeliveriesWrite))
	read := a.newKey(grant("r1", catalog.DeliveriesRead), grant("r2", catalog.DeliveriesRead))
	now := time.Now()

	ids, changes := a.readDeliveryChanges(read, "r1", "", 50)
	require.Empty(t, ids, "nothing received yet: one empty page")

	a.putDelivery(write, "r1", "d-new", now.Add(-time.Minute))
	a.putDelivery(write, "r1", "d-older", now.Add(-2*time.Hour))
	a.putDelivery(write, "r2", "d-other", now)
	ids, changes = a.readDeliveryChanges(read, "r1", changes, 50)
	require.Equal(t, []string{"d-new", "d-older"}, ids, "receive order, not occurredAt order; only this restaurant's")

	// The spec's polling recipe: from the newest occurredAt held minus an
	// hour. A device back online after three days uploads a check from
	// then: the window never shows it, the changes cursor does.
	newest := now.Add(-time.Minute).UnixMilli()
	late := now.Add(-72 * time.Hour)
	a.putDelivery(write, "r1", "d-late", late)
	a.putDelivery(write, "r1", "d-new", now.Add(-time.Minute)) // a replay: nothing new
	window := a.getAs(read, "/v1/restaurants/r1/deliveries?from="+strconv.FormatInt(newest-time.Hour.Milliseconds(), 10)+"&to="+strconv.FormatInt(now.UnixMilli(), 10))
	require.Equal(t, http.StatusOK, window.Status)
	require.NotContains(t, string(window.Body), "d-late", "the occurredAt window misses the late upload")
	ids, changes = a.readDeliveryChanges(read, "r1", changes, 50)
	require.Equal(t, []string{"d-late"}, ids, "the late upload, once; the replay added nothing")

	ids, _ = a.readDeliveryChanges(read, "r1", changes, 50)
	require.Empty(t, ids, "nothing received since")
	all, _ := a.readDeliveryChanges(read, "r1", "", 1)
	require.Equal(t, []string{"d-new", "d-older", "d-late"}, all, "pages of one, each delivery once, in receive order")

	// Refusals: a cursor of another restaurant, garbage, an empty one.
	r := a.getAs(read, deliveryChangesPath("r2", url.Values{"cursor": {changes}}))
	require.Contains(t, requireProblem(t, r, http.StatusBadRequest, "invalid-request").Detail, "another restaurant")
	for _, bad := range []string{"", "garbage", changes[:len(changes)-2]} {
		requireProblem(t, a.getAs(read, deliveryChangesPath("r1", url.Values{"cursor": {bad}})), http.StatusBadRequest, "invalid-request")
	}
	requireProblem(t, a.getAs(read, deliveryChangesPath("r1", url.Values{"limit": {"0"}})), http.StatusBadRequest, "invalid-request")

	// A database reset behind the cursor's position: refused, not a
	// silent empty page.
	ctx := context.Background()
	_, err := a.store().Pool().Exec(ctx, `DELETE FROM deliveries WHERE restaurant_id = 'r1'`)
	require.NoError(t, err)
	_, err = a.store().Pool().Exec(ctx, `UPDATE collection_streams SET last_sequence = 0 WHERE restaurant_id = 'r1' AND collection = 'deliveries'`)
	require.NoError(t, err)
	p := requireProblem(t, a.getAs(read, deliveryChangesPath("r1", url.Values{"cursor": {changes}})), http.StatusBadRequest, "invalid-request")
	require.Contains(t, p.Detail, "not reached")
}

// streamChangesDoc is a page of GET /v1/changes.
type streamChangesDoc struct {
	Data          []streamChange `json:"data"`
	NextCursor    *string        `json:"nextCursor"`
	ChangesCursor *string        `json:"changesCursor"`
}

type streamChange struct {
	RestaurantID string `json:"restaurantId"`
	Stream       string `json:"stream"`
	Head         string `json:"head"`
}

// readChanges lists from cursor to the last page; it returns the heads
// listed, by "restaurant/stream", and the changesCursor. A stream listed
// twice in one listing fails the test.
func (a *app) readChanges(key, cursor string, limit int) (map[string]string, string) {
	a.t.Helper()
	heads := map[string]string{}
	for pages := 0; ; pages++ {
		require.Less(a.t, pages, 10000, "the pages end")
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		r := a.getAs(key, "/v1/changes?"+q.Encode())
		require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
		var page streamChangesDoc
		r.JSON(a.t, &page)
		for _, c := range page.Data {
			k := c.RestaurantID + "/" + c.Stream
			_, dup := heads[k]
			require.False(a.t, dup, "%s listed twice in one listing", k)
			heads[k] = c.Head
		}
		if page.NextCursor == nil {
			require.NotNil(a.t, page.ChangesCursor)
			return heads, *page.ChangesCursor
		}
		cursor = *page.NextCursor
	}
}

// moved keeps the streams whose head differs from the one held: what a
// client walks. A listing may repeat a stream at the head it had (a write
// in flight anywhere in the database makes the position lag); it never
// leaves out one that moved.
func moved(listed, held map[string]string) map[string]string {
	out := map[string]string{}
	for k, h := range listed {
		if held[k] != h {
			out[k] = h
		}
	}
	return out
}

// GET /v1/changes lists, key-wide, the streams that changed since the
// cursor's position with their heads: everything readable that holds data
// without a cursor, then only the streams written since (collections and
// deliveries alike), across pages of any size; a grant added later
// restarts the listing so the stream it opens is not missed.
func TestChangesListsWhatChanged(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2", "r3")
	write := a.newKey(
		grant("r1", "areas:write", "products:write", catalog.DeliveriesWrite),
		grant("r2", "areas:write", catalog.DeliveriesWrite),
		grant("r3", "areas:write"))
	read := a.newKey(
		grant("r1", "areas:read", "products:read", catalog.DeliveriesRead),
		grant("r2", "areas:read", catalog.DeliveriesRead))

	heads, cur := a.readChanges(read, "", 50)
	require.Empty(t, heads, "no stream holds anything yet")

	a.put(write, "r1", "areas", "a1", "m1", area("Kitchen"))
	a.put(write, "r1", "areas", "a2", "m2", area("Cellar"))
	a.put(write, "r2", "areas", "a1", "m3", area("Bar"))
	a.putDelivery(write, "r2", "d1", time.Now())
	a.put(write, "r3", "areas", "a1", "m4", area("Not granted"))
	listed, cur := a.readChanges(read, cur, 50)
	require.Equal(t, map[string]string{"r1/areas": "2", "r2/areas": "1", "r2/deliveries": "1"}, moved(listed, heads))
	held := listed

	// Nothing written since: no head moved (the listing is small).
	listed, cur = a.readChanges(read, cur, 50)
	require.Empty(t, moved(listed, held))

	a.put(write, "r1", "products", "p1", "m5", map[string]any{"name": "Flour", "isDeleted": false})
	a.put(write, "r1", "areas", "a1", "m6", area("Kitchen 2"))
	a.putDelivery(write, "r2", "d0", time.Now().Add(-72*time.Hour))
	listed, cur = a.readChanges(read, cur, 1)
	require.Equal(t, map[string]string{"r1/areas": "3", "r1/products": "1", "r2/deliveries": "2"}, moved(listed, held))
	for k, h := range listed {
		held[k] = h
	}

	// Without a cursor: every readable stream that holds anything, at its
	// head, whatever the page size.
	for _, limit := range []int{1, 2, 100} {
		all, _ := a.readChanges(read, "", limit)
		require.Equal(t, map[string]string{"r1/areas": "3", "r1/products": "1", "r2/areas": "1", "r2/deliveries": "2"}, all, "limit %d", limit)
	}

	// A grant the key gains opens a stream written long before the
	// cursor's position: the listing starts over, so it is not missed.
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, read), []auth.Grant{grant("r3", "areas:read")}))
	listed, _ = a.readChanges(read, cur, 50)
	require.Equal(t, "1", listed["r3/areas"], "the newly granted stream is listed")

	// Refusals: garbage, a delivery changes cursor, a bad limit.
	_, dcur := a.readDeliveryChanges(read, "r1", "", 50)
	for _, bad := range []string{"", "garbage", dcur} {
		requireProblem(t, a.getAs(read, "/v1/changes?cursor="+url.QueryEscape(bad)), http.StatusBadRequest, "invalid-request")
	}
	requireProblem(t, a.getAs(read, "/v1/changes?limit=101"), http.StatusBadRequest, "invalid-request")
	require.Equal(t, http.StatusUnauthorized, a.get("/v1/changes").Status)
}

// A key that reads some collections of some restaurants learns nothing,
// through GET /v1/changes or the list_changes tool, about the streams it
// cannot read: they are never listed, and writing to them does not change
// what it is told (the pages it gets are the same, page for page), just
// as a restaurant it has no grant for is not there at all.
func TestChangesRevealOnlyWhatTheKeyReads(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2", "r3")
	var writes []string
	for _, c := range catalog.Collections {
		writes = append(writes, c.WriteScope())
	}
	writes = append(writes, catalog.DeliveriesWrite)
	write := a.newKey(grant("r1", writes...), grant("r2", writes...), grant("r3", writes...))
	cases := []struct {
		name  string
		key   string
		reads map[string]bool // restaurant/stream the key may read
	}{
		{"one collection of one restaurant", a.newKey(grant("r1", "areas:read")), map[string]bool{"r1/areas": true}},
		{"deliveries only, writes elsewhere",
			a.newKey(grant("r2", catalog.DeliveriesRead, catalog.DeliveryImagesRead), grant("r3", "areas:write")),
			map[string]bool{"r2/deliveries": true}},
		{"different collections per restaurant",
			a.newKey(grant("r1", "products:read", "areas:read"), grant("r3", "cooling:read", catalog.DeliveriesRead)),
			map[string]bool{"r1/products": true, "r1/areas": true, "r3/cooling": true, "r3/deliveries": true}},
		{"write scopes only", a.newKey(grant("r1", "areas:write")), map[string]bool{}},
	}
	writeAll := func(round int) {
		for _, r := range []string{"r1", "r2", "r3"} {
			for _, c := range []string{"areas", "products", "cooling"} {
				id := c + "-" + strconv.Itoa(round)
				var data any = area("x")
				if c == "cooling" {
					data = map[string]any{"timestamp": "1700000000000", "product": "Soup", "beginDate": "1700000000000", "beginTemperature": 70}
				}
				a.put(write, r, c, id, "m-"+r+"-"+id, data)
			}
			a.putDelivery(write, r, "d-"+r+"-"+strconv.Itoa(round), time.Now())
		}
	}
	writeAll(0)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			listed, cur := a.readChanges(tc.key, "", 1)
			got := map[string]bool{}
			for k := range listed {
				got[k] = true
			}
			require.Equal(t, tc.reads, got, "exactly the streams the key reads")

			// The same listing over MCP.
			s := a.mcpConnect(t, tc.key, rev2026)
			var page streamChangesDoc
			require.NoError(t, json.Unmarshal(s.ok("list_changes", map[string]any{"limit": 100}), &page))
			viaMCP := map[string]bool{}
			for _, c := range page.Data {
				viaMCP[c.RestaurantID+"/"+c.Stream] = true
			}
			require.Equal(t, tc.reads, viaMCP, "list_changes says the same")
			require.Contains(t, s.toolNames(), "list_changes")

			// Writes to streams the key cannot read change nothing it is
			// told: from the same cursor, the same pages.
			before := a.changesPages(tc.key, cur)
			for _, r := range []string{"r1", "r2", "r3"} {
				for _, c := range []string{"users", "equipment"} {
					a.put(write, r, c, c+"-hidden", "m-hidden-"+r+"-"+c+"-"+strconv.Itoa(i), hiddenData(c))
				}
				if !tc.reads[r+"/deliveries"] {
					a.putDelivery(write, r, "d-hidden-"+r+"-"+strconv.Itoa(i), time.Now())
				}
			}
			require.Equal(t, before, a.changesPages(tc.key, cur), "unreadable writes leave the pages as they were")
		})
	}
}

// changesPages lists from cursor in pages of one and returns each page's
// data (cursors left out: they are opaque positions).
func (a *app) changesPages(key, cursor string) [][]streamChange {
	a.t.Helper()
	var pages [][]streamChange
	for {
		q := url.Values{"limit": {"1"}, "cursor": {cursor}}
		r := a.getAs(key, "/v1/changes?"+q.Encode())
		require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
		var page streamChangesDoc
		r.JSON(a.t, &page)
		pages = append(pages, page.Data)
		if page.NextCursor == nil {
			return pages
		}
		cursor = *page.NextCursor
	}
}

func hiddenData(collection string) any {
	if collection == "users" {
		return map[string]any{"lastName": "H", "firstName": "I", "email": "h@example.com"}
	}
	return map[string]any{"index": 1, "type": "fridge", "name": "Fridge", "isDeleted": false}
}
