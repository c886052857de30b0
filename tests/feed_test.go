package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/store"
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

// syncCopy is what a client holds after a first sync through the feed:
// each stream's records by id (deliveries by id) and the cursor and head
// to go on from.
type syncCopy struct {
	records map[string]map[string]envelopeDoc
	cursors map[string]feedStreamDoc
}

func newSyncCopy(run feedRun) syncCopy {
	c := syncCopy{records: map[string]map[string]envelopeDoc{}, cursors: run.streams}
	for k, its := range run.items {
		c.records[k] = map[string]envelopeDoc{}
		for _, it := range its {
			if it.Record != nil {
				c.records[k][it.Record.ID] = *it.Record
			} else {
				var d struct{ ID string }
				_ = json.Unmarshal(it.Delivery, &d)
				c.records[k][d.ID] = envelopeDoc{ID: d.ID}
			}
		}
	}
	return c
}

// catchUp does what a client does after the feed: list what changed from
// the feed's changesCursor, and walk each stream whose head moved from the
// cursor the feed gave for it (a stream the feed did not give, from its
// beginning).
func (a *app) catchUp(key string, c syncCopy, changes string) {
	a.t.Helper()
	listed, _ := a.readChanges(key, changes, 100)
	for k, head := range listed {
		held, ok := c.cursors[k]
		if ok && held.Head == head {
			continue
		}
		restaurant, stream, _ := strings.Cut(k, "/")
		if c.records[k] == nil {
			c.records[k] = map[string]envelopeDoc{}
		}
		if stream == catalog.DeliveryStream {
			ids, _ := a.readDeliveryChanges(key, restaurant, held.ChangesCursor, 100)
			for _, id := range ids {
				c.records[k][id] = envelopeDoc{ID: id}
			}
			continue
		}
		recs, _ := a.walkFrom(key, restaurant, stream, 100, held.ChangesCursor)
		for _, e := range recs {
			c.records[k][e.ID] = e
		}
	}
}

// current is every readable stream as full walks read it now.
func (a *app) current(key string) map[string]map[string]envelopeDoc {
	a.t.Helper()
	listed, _ := a.readChanges(key, "", 100)
	out := map[string]map[string]envelopeDoc{}
	for k := range listed {
		restaurant, stream, _ := strings.Cut(k, "/")
		out[k] = map[string]envelopeDoc{}
		if stream == catalog.DeliveryStream {
			ids, _ := a.readDeliveryChanges(key, restaurant, "", 100)
			for _, id := range ids {
				out[k][id] = envelopeDoc{ID: id}
			}
			continue
		}
		for _, e := range a.walkAll(key, restaurant, stream, 100) {
			out[k][e.ID] = e
		}
	}
	return out
}

// Writes made while a feed runs (to streams it has passed, the stream it
// is in, streams it has not reached, a stream it will never reach because
// it sorts before its position; records created, updated and deleted;
// deliveries) are all seen: the feed's pages as of each stream's pin,
// then the listing from the feed's changesCursor and the walks from the
// per-stream cursors bring the copy to exactly what full walks read now.
func TestRecordFeedSeesWritesMadeDuringIt(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	write, _ := feedFixture(a, 8)
	read := feedReader(a, 8)
	writes := []func(){
		func() { a.put(write, "r00", "areas", "a9", "m-during-1", area("Passed stream")) },
		func() { a.put(write, "r07", "areas", "a0", "m-during-2", area("Not reached, updated")) },
		func() { a.tombstone(write, "r06", "areas", "a1", "m-during-3") },
		func() { a.putDelivery(write, "r04", "d-during", time.Now()) },
		func() { a.put(write, "r00", "cooling", "c1", "m-during-4", coolingData()) },
		func() { a.put(write, "r03", "areas", "a0", "m-during-5", area("In progress or passed")) },
		func() { a.tombstone(write, "r01", "areas", "a1", "m-during-6") },
		func() { a.put(write, "r07", "cooling", "c1", "m-during-7", coolingData()) },
	}
	run := feedRun{items: map[string][]feedItemDoc{}, streams: map[string]feedStreamDoc{}}
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 1000)
		p := a.feedStep(read, 2, cursor)
		for _, it := range p.Data {
			k := it.RestaurantID + "/" + it.Stream
			run.items[k] = append(run.items[k], it)
		}
		for _, s := range p.Streams {
			run.streams[s.RestaurantID+"/"+s.Stream] = s
		}
		if page < len(writes) {
			writes[page]()
		}
		if p.NextCursor == nil {
			run.changes = *p.ChangesCursor
			break
		}
		cursor = *p.NextCursor
	}
	require.Greater(t, len(run.streams), len(writes), "the feed outlasted the writes")
	c := newSyncCopy(run)
	a.catchUp(read, c, run.changes)
	require.Equal(t, a.current(read), c.records, "the copy is what full walks read now")

	// And again: nothing written since, nothing to walk.
	listed, _ := a.readChanges(read, run.changes, 100)
	require.Contains(t, listed, "r00/cooling", "a stream created during the feed is listed")
}

func coolingData() map[string]any {
	return map[string]any{"timestamp": "1700000000000", "product": "Soup", "beginDate": "1700000000000", "beginTemperature": 70}
}

// A stream the feed is in stays pinned: a record deleted in it after the
// feed's page returned some of its records comes, later in the same
// stream, as it stood at the pin (a record created after the pin does not
// come at all); the stream's changesCursor then walks the tombstone and
// the new record.
func TestRecordFeedPinsTheStreamItIsIn(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	write := a.newKey(grant("r1", "areas:write"))
	read := a.newKey(grant("r1", "areas:read"))
	for i := range 4 {
		a.put(write, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area(fmt.Sprintf("Area %d", i)))
	}
	p := a.feedStep(read, 2, "")
	require.Len(t, p.Data, 2)
	require.Empty(t, p.Streams, "the stream is not finished")
	a.tombstone(write, "r1", "areas", "a3", "m-del")
	a.put(write, "r1", "areas", "a4", "m-new", area("After the pin"))
	q := a.feedStep(read, 10, *p.NextCursor)
	require.Equal(t, []string{"a2", "a3"}, []string{q.Data[0].Record.ID, q.Data[1].Record.ID}, "as of the pin")
	require.Len(t, q.Data, 2)
	require.False(t, q.Data[1].Record.Deleted, "a3 as it stood at the pin")
	require.Len(t, q.Streams, 1)
	require.Equal(t, "4", q.Streams[0].Head, "the pin")
	since, _ := a.walkFrom(read, "r1", "areas", 100, q.Streams[0].ChangesCursor)
	require.Len(t, since, 2)
	require.Equal(t, "a3", since[0].ID)
	require.True(t, since[0].Deleted, "the deletion, as a tombstone")
	require.Equal(t, "a4", since[1].ID)
	require.NotNil(t, q.ChangesCursor)
	listed, _ := a.readChanges(read, *q.ChangesCursor, 100)
	require.Equal(t, "6", listed["r1/areas"], "the listing from the feed's start reports the stream written since")
}

// When the key's grants change during a feed, its next page starts the
// feed over from the beginning: a stream the key gained may sort before
// the feed's position, and must not be missed.
func TestRecordFeedStartsOverWhenGrantsChange(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	feedFixture(a, 6)
	read := feedReader(a, 5)
	p := a.feedStep(read, 3, "")
	p = a.feedStep(read, 3, *p.NextCursor)
	require.NotEqual(t, "r00", p.Data[0].RestaurantID, "the feed has moved on")
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, read), []auth.Grant{grant("r05", "areas:read")}))
	again := a.feedStep(read, 3, *p.NextCursor)
	require.Equal(t, a.feedStep(read, 3, "").Data, again.Data, "the old cursor starts the feed over")
	run := a.readFeed(read, *p.NextCursor, 3)
	require.Contains(t, run.streams, "r05/areas", "the stream gained is in the feed")
	require.Contains(t, run.streams, "r00/areas", "so is everything before the old position")
}

// The feed holds exactly the streams the key reads: no deliveries without
// deliveries:read, no collection without its read scope, nothing of a
// restaurant not granted; a key that reads nothing gets one empty last
// page. walk_all_records, through a real MCP client, says the same.
func TestRecordFeedFollowsScopes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	feedFixture(a, 4)
	for name, c := range map[string]struct {
		key     string
		streams []string
	}{
		"one collection of one restaurant": {a.newKey(grant("r00", "areas:read")), []string{"r00/areas"}},
		"deliveries only":                  {a.newKey(grant("r00", catalog.DeliveriesRead), grant("r01", catalog.DeliveriesRead)), []string{"r00/deliveries"}},
		"no deliveries without the scope": {a.newKey(grant("r00", "areas:read", "products:read", catalog.DeliveriesWrite), grant("r01", "products:read")),
			[]string{"r00/areas", "r01/products"}},
		"writes only": {a.newKey(grant("r00", "areas:write", catalog.DeliveriesWrite)), []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			run := a.readFeed(c.key, "", 1)
			require.Equal(t, c.streams, append([]string{}, run.order...), "exactly the streams the key reads")
			if len(c.streams) == 0 {
				require.Equal(t, 1, run.pages, "one empty last page")
			}
			rest := a.feedStep(c.key, 500, "")
			s := a.mcpConnect(t, c.key, rev2026)
			require.Contains(t, s.toolNames(), "walk_all_records", "any key may use it")
			var viaMCP feedPageDoc
			require.NoError(t, json.Unmarshal(s.ok("walk_all_records", map[string]any{"limit": 500}), &viaMCP))
			require.Equal(t, canonicalItems(t, rest.Data), canonicalItems(t, viaMCP.Data), "walk_all_records answers what GET /v1/records does")
			require.Equal(t, len(rest.Streams), len(viaMCP.Streams))
		})
	}
}

// walk_all_records pages through a real MCP client with the same cursors
// as REST (a REST nextCursor continues over MCP), its default page is
// MCP's, its limit goes to 500, and its failures are tool errors saying
// what REST's problems say.
func TestRecordFeedOverMCP(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	feedFixture(a, 12)
	read := feedReader(a, 12)
	whole := a.readFeed(read, "", 500)
	s := a.mcpConnect(t, read, rev1125)
	var first feedPageDoc
	require.NoError(t, json.Unmarshal(s.ok("walk_all_records", nil), &first))
	require.Len(t, first.Data, 20, "MCP's default page")
	require.NotNil(t, first.NextCursor)
	// REST page, then MCP pages from its cursor, to the end.
	p := a.feedStep(read, 5, "")
	got := append([]feedItemDoc{}, p.Data...)
	cursor := *p.NextCursor
	for i := 0; ; i++ {
		require.Less(t, i, 100)
		var page feedPageDoc
		require.NoError(t, json.Unmarshal(s.ok("walk_all_records", map[string]any{"limit": 7, "cursor": cursor}), &page))
		got = append(got, page.Data...)
		if page.NextCursor == nil {
			require.NotNil(t, page.ChangesCursor)
			break
		}
		cursor = *page.NextCursor
	}
	var want []feedItemDoc
	for _, k := range whole.order {
		want = append(want, whole.items[k]...)
	}
	require.Equal(t, canonicalItems(t, want), canonicalItems(t, got), "the same feed, whichever face pages it")
	require.Contains(t, s.toolErr("walk_all_records", map[string]any{"limit": 501}), "limit")
	require.Contains(t, s.toolErr("walk_all_records", map[string]any{"cursor": "garbage"}), "start the feed again")
	r := s.call("walk_all_records", map[string]any{"limit": 500})
	require.False(t, r.IsError)
	require.Contains(t, r.Text, "walk_records later with cursor", "the text says how to go on per stream")
}

// Refused cursors and limits are 400 invalid-request problems naming the
// parameter: garbage, truncated, tampered, a cursor of another list,
// expired (the walk TTL after the feed started its current stream: start
// the feed again); limits 0 and 501 and anything not plain digits. 1 and
// 500 are served.
func TestRecordFeedRefusals(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := newApp(t, withClock(clock))
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:write", "products:read", catalog.DeliveriesRead))
	for i := range 5 {
		a.put(key, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area("x"))
	}
	a.put(key, "r1", "products", "p1", "mp1", map[string]any{"name": "Flour", "isDeleted": false})
	cur := *a.feedStep(key, 2, "").NextCursor
	walkCur := *a.walkStep(key, "r1", "areas", 2, "").NextCursor
	_, changesCur := a.readChanges(key, "", 10)
	_, deliveryCur := a.readDeliveryChanges(key, "r1", "", 10)

	refuse := func(name, query, says string) {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, a.getAs(key, "/v1/records?"+query), http.StatusBadRequest, "invalid-request")
			require.NotEmpty(t, p.Errors)
			require.Contains(t, p.Detail, says)
		})
	}
	c := func(s string) string { return "cursor=" + url.QueryEscape(s) }
	refuse("garbage", c("not-a-cursor"), "start the feed again")
	refuse("empty", "cursor=", "start the feed again")
	refuse("truncated", c(cur[:20]), "start the feed again")
	refuse("tampered", c(flipChar(cur, len(cur)-5)), "start the feed again")
	refuse("a walk's nextCursor", c(walkCur), "start the feed again")
	refuse("a changes cursor", c(changesCur), "start the feed again")
	refuse("a delivery changes cursor", c(deliveryCur), "start the feed again")
	refuse("twice", c(cur)+"&"+c(cur), "at most once")
	for _, l := range []string{"0", "501", "-1", "01", "1.0", "abc", ""} {
		refuse("limit "+l, "limit="+l, "from 1 to 500")
	}
	for _, l := range []int{1, 500} {
		p := a.feedStep(key, l, "")
		require.Len(t, p.Data, min(l, 6), "limit %d", l)
	}
	// Any limit on any page.
	require.Len(t, a.feedStep(key, 3, cur).Data, 3)

	// Inside a stream the cursors last the walk TTL from when the feed
	// started it, however many pages follow...
	advance(24*time.Hour - time.Second)
	next := a.feedStep(key, 1, cur)
	require.Equal(t, "a2", next.Data[0].Record.ID)
	// ...and a cursor past the stream starts a lifetime of its own.
	past := a.feedStep(key, 2, *next.NextCursor)
	require.Equal(t, []string{"a3", "a4"}, []string{past.Data[0].Record.ID, past.Data[1].Record.ID})
	advance(2 * time.Second)
	refuse("expired", c(*next.NextCursor), "expired; start the feed again")
	rest := a.feedStep(key, 10, *past.NextCursor)
	require.Len(t, rest.Data, 1, "the cursor past the stream still works")
	require.Equal(t, "p1", rest.Data[0].Record.ID)
}

// A page stops adding items once they pass about 1 MiB, whatever its
// limit, and the feed still returns every record once: records of 9 KB
// come about 113 to a page of limit 500.
func TestRecordFeedByteBudget(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	const records = 250
	for i := range records {
		a.put(key, "r1", "areas", fmt.Sprintf("a%03d", i), fmt.Sprintf("m%d", i), area(strings.Repeat("x", 9000)))
	}
	var sizes []int
	seen := map[string]bool{}
	cursor := ""
	for {
		r := a.getAs(key, feedPath(500, cursor))
		require.Equal(t, http.StatusOK, r.Status)
		var p feedPageDoc
		r.JSON(t, &p)
		sizes = append(sizes, len(p.Data))
		for _, it := range p.Data {
			require.False(t, seen[it.Record.ID], "each record once")
			seen[it.Record.ID] = true
		}
		if p.NextCursor == nil {
			break
		}
		require.Greater(t, len(r.Body), 1<<20-10_000, "a page is cut once it passes the budget, not before")
		require.Less(t, len(r.Body), 1<<20+20_000, "and not much after")
		cursor = *p.NextCursor
	}
	require.Len(t, seen, records)
	require.Len(t, sizes, 3, "pages of what 1 MiB holds: %v", sizes)
}

// canonicalItems rewrites the deliveries of items with their members
// sorted: an MCP client re-encodes the structured output.
func canonicalItems(t testing.TB, items []feedItemDoc) []feedItemDoc {
	out := make([]feedItemDoc, len(items))
	for i, it := range items {
		if it.Delivery != nil {
			var v any
			require.NoError(t, json.Unmarshal(it.Delivery, &v))
			b, err := json.Marshal(v)
			require.NoError(t, err)
			it.Delivery = b
		}
		out[i] = it
	}
	return out
}

// Compaction never takes a version a feed's pinned stream still needs:
// compaction drops the data of versions superseded longer ago than
// FOODSAFE_COMPACT_AFTER, and the feed's cursors inside a stream stop
// working FOODSAFE_CURSOR_TTL (shorter) after the request that pinned it.
// Just before that, with the compaction job's own horizon, a record
// updated right after the pin still comes as it stood, data and all; just
// after, the cursor is refused and the feed starts again.
func TestRecordFeedUnderCompaction(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a := newApp(t, withClock(clock))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	for i := range 4 {
		a.put(key, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area(fmt.Sprintf("Area %d", i)))
	}
	p := a.feedStep(key, 2, "")
	a.put(key, "r1", "areas", "a3", "m3-renamed", area("Renamed"))
	compact := func() int64 {
		at := clock()
		n, err := a.store().ChangesCompact(context.Background(), store.ChangesCompactParams{RestaurantID: "r1", Now: at.UnixMilli(),
			Horizon: at.Add(-time.Duration(a.cfg.CompactAfter)).UnixMilli(), Max: 1000})
		require.NoError(t, err)
		return n
	}
	advance(a.cfg.CursorTTL - time.Second)
	require.Zero(t, compact(), "nothing superseded long enough ago")
	q := a.feedStep(key, 10, *p.NextCursor)
	require.Len(t, q.Data, 2)
	require.Equal(t, "a3", q.Data[1].Record.ID)
	require.JSONEq(t, `{"name":"Area 3","isDeleted":false}`, string(q.Data[1].Record.Data), "as it stood at the pin, data and all")

	advance(time.Duration(a.cfg.CompactAfter))
	require.Equal(t, int64(1), compact(), "the superseded version is compacted once no cursor can need it")
	r := a.getAs(key, feedPath(10, *p.NextCursor))
	require.Contains(t, requireProblem(t, r, http.StatusBadRequest, "invalid-request").Detail, "expired; start the feed again")
	again := a.readFeed(key, "", 10)
	require.Len(t, again.records("r1/areas"), 4)
}
