package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
)

// feedItemDoc is an item of GET /v1/records.
type feedItemDoc struct {
	RestaurantID string          `json:"restaurantId"`
	Stream       string          `json:"stream"`
	Record       *envelopeDoc    `json:"record"`
	Delivery     json.RawMessage `json:"delivery"`
}

// feedStreamDoc is an entry of a feed page's streams.
type feedStreamDoc struct {
	RestaurantID  string `json:"restaurantId"`
	Stream        string `json:"stream"`
	Head          string `json:"head"`
	ChangesCursor string `json:"changesCursor"`
}

type feedPageDoc struct {
	Data          []feedItemDoc   `json:"data"`
	Streams       []feedStreamDoc `json:"streams"`
	NextCursor    *string         `json:"nextCursor"`
	ChangesCursor *string         `json:"changesCursor"`
}

// feedRun is a whole feed as a client reads it.
type feedRun struct {
	// items by "restaurant/stream", in feed order.
	items   map[string][]feedItemDoc
	order   []string
	streams map[string]feedStreamDoc
	changes string
	pages   int
}

func feedPath(limit int, cursor string) string {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return "/v1/records?" + q.Encode()
}

// feedStep reads one page of the feed.
func (a *app) feedStep(key string, limit int, cursor string) feedPageDoc {
	a.t.Helper()
	r := a.getAs(key, feedPath(limit, cursor))
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var p feedPageDoc
	r.JSON(a.t, &p)
	return p
}

// readFeed reads the feed from cursor to its last page, limit items per
// page, holding each page to the contract's shape: streams in
// (restaurant, stream) order, each one's items together and in sequence
// order, each stream listed once (on the page of its last item), at most
// limit items per page and never an empty page before the last.
func (a *app) readFeed(key, cursor string, limit int) feedRun {
	a.t.Helper()
	run := feedRun{items: map[string][]feedItemDoc{}, streams: map[string]feedStreamDoc{}}
	last, lastEnded := "", ""
	for ; ; run.pages++ {
		require.Less(a.t, run.pages, 10000, "the pages end")
		p := a.feedStep(key, limit, cursor)
		if limit > 0 {
			require.LessOrEqual(a.t, len(p.Data), limit)
		}
		for _, it := range p.Data {
			k := it.RestaurantID + "/" + it.Stream
			require.GreaterOrEqual(a.t, k, last, "streams in order")
			require.NotContains(a.t, run.streams, k, "no item of a stream after its end")
			if k != last {
				require.NotContains(a.t, run.items, k, "a stream's items are together")
				run.order = append(run.order, k)
				last = k
			}
			if it.Stream == catalog.DeliveryStream {
				require.Nil(a.t, it.Record)
				require.NotEmpty(a.t, it.Delivery)
			} else {
				require.NotNil(a.t, it.Record)
				require.Empty(a.t, it.Delivery)
				require.Equal(a.t, it.RestaurantID, it.Record.RestaurantID)
				require.Equal(a.t, it.Stream, it.Record.Collection)
				if prev := run.items[k]; len(prev) > 0 {
					require.Less(a.t, prev[len(prev)-1].Record.seq(a.t), it.Record.seq(a.t), "sequence ascending")
				}
			}
			run.items[k] = append(run.items[k], it)
		}
		for _, s := range p.Streams {
			k := s.RestaurantID + "/" + s.Stream
			require.NotContains(a.t, run.streams, k, "each stream listed once")
			require.Greater(a.t, k, lastEnded, "streams listed in feed order")
			require.LessOrEqual(a.t, k, last, "a stream is listed on the page of its last item, or of the items after it")
			run.streams[k] = s
			if _, ok := run.items[k]; !ok {
				run.order = append(run.order, k)
				last = k
			}
			lastEnded = k
		}
		if p.NextCursor == nil {
			require.NotNil(a.t, p.ChangesCursor, "the last page carries changesCursor")
			run.changes = *p.ChangesCursor
			run.pages++
			return run
		}
		require.Nil(a.t, p.ChangesCursor, "only the last page carries changesCursor")
		require.NotEmpty(a.t, p.Data, "no empty page before the last")
		cursor = *p.NextCursor
	}
}

// records is the records of a stream's items.
func (r feedRun) records(k string) []envelopeDoc {
	out := []envelopeDoc{}
	for _, it := range r.items[k] {
		out = append(out, *it.Record)
	}
	return out
}

// deliveryIDs is the ids of a deliveries stream's items.
func (r feedRun) deliveryIDs(t testing.TB, k string) []string {
	out := []string{}
	for _, it := range r.items[k] {
		var d struct{ ID string }
		require.NoError(t, json.Unmarshal(it.Delivery, &d))
		out = append(out, d.ID)
	}
	return out
}

// feedFixture writes records and deliveries of many restaurants and
// streams, some of them updated and deleted, and returns the write key
// and the streams written, by "restaurant/stream".
func feedFixture(a *app, restaurants int) (string, map[string]bool) {
	a.t.Helper()
	var rs []string
	for i := range restaurants {
		rs = append(rs, fmt.Sprintf("r%02d", i))
	}
	a.addRestaurants(rs...)
	var grants []auth.Grant
	for _, r := range rs {
		grants = append(grants, grant(r, "areas:write", "products:write", "cooling:write", catalog.DeliveriesWrite))
	}
	write := a.newKey(grants...)
	written := map[string]bool{}
	for i, r := range rs {
		for n := range i%3 + 1 {
			a.put(write, r, "areas", fmt.Sprintf("a%d", n), fmt.Sprintf("m-%s-a%d", r, n), area(fmt.Sprintf("Area %d", n)))
			written[r+"/areas"] = true
		}
		for n := range i % 2 {
			a.put(write, r, "products", fmt.Sprintf("p%d", n), fmt.Sprintf("m-%s-p%d", r, n), map[string]any{"name": "Flour", "isDeleted": false})
			written[r+"/products"] = true
		}
		if i%4 == 0 {
			a.putDelivery(write, r, "d-"+r+"-1", time.Now().Add(-time.Hour))
			a.putDelivery(write, r, "d-"+r+"-2", time.Now().Add(-48*time.Hour))
			written[r+"/deliveries"] = true
		}
		if i%5 == 1 {
			// Updated and deleted: the head is past the records held.
			a.put(write, r, "areas", "a0", "m-"+r+"-a0-2", area("Renamed"))
			a.tombstone(write, r, "areas", "a0", "m-"+r+"-a0-3")
		}
	}
	return write, written
}

// tombstone deletes a record.
func (a *app) tombstone(key, restaurant, collection, id, mutation string) {
	a.t.Helper()
	r := a.ingest(key, restaurant, collection, id, mutation, snapshot(restaurant, id, mutation, 1_700_000_000_001, true, nil))
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
}

// feedReader is a key that reads areas, products and deliveries of the
// first granted restaurants (not products at r03, not deliveries at
// r04), and nothing of the others.
func feedReader(a *app, granted int) string {
	a.t.Helper()
	var grants []auth.Grant
	for i := range granted {
		r := fmt.Sprintf("r%02d", i)
		scopes := []string{"areas:read", "cooling:read"}
		if r != "r03" {
			scopes = append(scopes, "products:read")
		}
		if r != "r04" {
			scopes = append(scopes, catalog.DeliveriesRead)
		}
		grants = append(grants, grant(r, scopes...))
	}
	return a.newKey(grants...)
}

// The feed is the union of the walks of every stream the key reads
// (exactly the streams GET /v1/changes lists without a cursor), in the
// listing's order, whatever the page size: each collection's records as
// its full walk returns them (tombstones included), each restaurant's
// deliveries as delivery-changes returns them. Each stream's head and
// changesCursor are its walk's: walking from them finds nothing new.
func TestRecordFeedIsTheUnionOfWalks(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	_, written := feedFixture(a, 14)
	read := feedReader(a, 12)
	listed, _ := a.readChanges(read, "", 100)
	require.NotEmpty(t, listed)
	for k := range written {
		var r int
		_, err := fmt.Sscanf(k, "r%02d/", &r)
		require.NoError(t, err)
		readable := r < 12 && k != "r03/products" && k != "r04/deliveries"
		require.Equal(t, readable, listed[k] != "", "%s listed by GET /v1/changes", k)
	}

	var first feedRun
	for _, limit := range []int{0, 1, 2, 3, 7, 500} {
		run := a.readFeed(read, "", limit)
		heads := map[string]string{}
		for k, s := range run.streams {
			heads[k] = s.Head
		}
		require.Equal(t, listed, heads, "limit %d: every stream GET /v1/changes lists, once, at its head", limit)
		if limit == 0 {
			first = run
			continue
		}
		require.Equal(t, first.order, run.order, "limit %d: the same streams in the same order", limit)
		for _, k := range run.order {
			require.Equal(t, first.items[k], run.items[k], "limit %d: %s", limit, k)
		}
		if limit == 1 {
			require.Equal(t, countItems(first), run.pages, "pages of one item: one page per item (the last item's page ends the feed)")
		}
	}
	for _, k := range first.order {
		s := first.streams[k]
		if s.Stream == catalog.DeliveryStream {
			ids, _ := a.readDeliveryChanges(read, s.RestaurantID, "", 100)
			require.Equal(t, ids, first.deliveryIDs(t, k), "%s: delivery-changes' deliveries", k)
			since, _ := a.readDeliveryChanges(read, s.RestaurantID, s.ChangesCursor, 100)
			require.Empty(t, since, "%s: nothing received since the feed's cursor", k)
			continue
		}
		require.Equal(t, a.walkAll(read, s.RestaurantID, s.Stream, 100), first.records(k), "%s: the walk's records", k)
		since, _ := a.walkFrom(read, s.RestaurantID, s.Stream, 100, s.ChangesCursor)
		require.Empty(t, since, "%s: nothing changed since the feed's cursor", k)
	}
	var tombstones []string
	for _, e := range first.records("r01/areas") {
		if e.Deleted {
			tombstones = append(tombstones, e.ID)
		}
	}
	require.Equal(t, []string{"a0"}, tombstones, "a deleted record comes as its tombstone, as in a walk")
}

func countItems(r feedRun) int {
	n := 0
	for _, its := range r.items {
		n += len(its)
	}
	return n
}
