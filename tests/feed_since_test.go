package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
)

// readFeedSince reads the feed of what changed since a changesCursor to
// its last page, limit items a page: the items by "restaurant/stream" as
// "id" (a tombstone as "-id"; a delivery by its id), the streams it
// ended, and its last changesCursor.
func (a *app) readFeedSince(key, since string, limit int) (map[string][]string, map[string]feedStreamDoc, string, int) {
	a.t.Helper()
	items, ended := map[string][]string{}, map[string]feedStreamDoc{}
	q := url.Values{"since": {since}, "limit": {strconv.Itoa(limit)}}
	for pages := 1; ; pages++ {
		require.Less(a.t, pages, 1000)
		r := a.getAs(key, "/v1/records?"+q.Encode())
		require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
		var p feedPageDoc
		r.JSON(a.t, &p)
		require.LessOrEqual(a.t, len(p.Data), limit)
		for _, it := range p.Data {
			k := it.RestaurantID + "/" + it.Stream
			switch {
			case it.Record != nil && it.Record.Deleted:
				items[k] = append(items[k], "-"+it.Record.ID)
			case it.Record != nil:
				items[k] = append(items[k], it.Record.ID)
			default:
				var d struct {
					ID string `json:"id"`
				}
				require.NoError(a.t, json.Unmarshal(it.Delivery, &d))
				items[k] = append(items[k], d.ID)
			}
		}
		for _, s := range p.Streams {
			ended[s.RestaurantID+"/"+s.Stream] = s
		}
		if p.NextCursor == nil {
			require.NotNil(a.t, p.ChangesCursor)
			return items, ended, *p.ChangesCursor, pages
		}
		q = url.Values{"cursor": {*p.NextCursor}, "limit": {strconv.Itoa(limit)}}
	}
}

// sinceApp is the service with restaurants r1 and r2 and a key that
// writes and reads them: four areas of r1, one of r2, a product and a
// delivery of r1, written through the API.
func sinceApp(t *testing.T) (*app, string) {
	t.Helper()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:write", "products:read", catalog.DeliveriesRead, "deliveries:write"),
		grant("r2", "areas:write", "areas:read"))
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		a.put(key, "r1", "areas", id, "m-"+id, area(id))
	}
	a.put(key, "r2", "areas", "b1", "m-b1", area("b1"))
	a.put(key, "r1", "products", "p1", "m-p1", map[string]any{"name": "Flour", "isDeleted": false})
	a.putDelivery(key, "r1", "d1", time.Now())
	return a, key
}

// GET /v1/records?since= brings what changed since a changesCursor (the
// feed's or GET /v1/changes'), many streams a page: the new versions,
// tombstones and new records of the streams written since, and the
// deliveries received since, never what the position already held; a
// stream it ends keeps a changesCursor a walk goes on from. Nothing
// changed: one empty last page. Refused with 400: garbage, a listing's
// nextCursor, since with cursor, and a position issued before the key's
// grants changed.
func TestRecordFeedSince(t *testing.T) {
	t.Parallel()
	a, key := sinceApp(t)
	full := a.readFeed(key, "", 500)

	items, ended, idle, pages := a.readFeedSince(key, full.changes, 500)
	require.Empty(t, items, "nothing changed")
	require.Empty(t, ended)
	require.Equal(t, 1, pages)

	a.put(key, "r1", "areas", "a1", "m-a1-2", area("a1 again"))
	a.tombstone(key, "r1", "areas", "a3", "m-a3-gone")
	a.put(key, "r1", "areas", "a9", "m-a9", area("a9"))
	a.put(key, "r2", "areas", "b2", "m-b2", area("b2"))
	a.putDelivery(key, "r1", "d2", time.Now().Add(-72*time.Hour))
	for _, limit := range []int{1, 2, 500} {
		items, ended, next, _ := a.readFeedSince(key, idle, limit)
		require.Equal(t, map[string][]string{
			"r1/areas": {"a1", "-a3", "a9"}, "r1/deliveries": {"d2"}, "r2/areas": {"b2"},
		}, items, "limit %d", limit)
		keys := make([]string, 0, len(ended))
		for k := range ended {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		require.Equal(t, []string{"r1/areas", "r1/deliveries", "r2/areas"}, keys)
		require.Equal(t, "7", ended["r1/areas"].Head)
		// A walk from the cursor it ended a stream at has nothing more.
		require.Empty(t, a.walkStep(key, "r1", "areas", 100, ended["r1/areas"].ChangesCursor).Data)
		// And the position it ended at has nothing to bring.
		again, _, _, _ := a.readFeedSince(key, next, 500)
		require.Empty(t, again)
	}

	// From a GET /v1/changes cursor too.
	_, listed := a.readChanges(key, "", 100)
	a.put(key, "r2", "areas", "b3", "m-b3", area("b3"))
	items, _, _, _ = a.readFeedSince(key, listed, 500)
	require.Equal(t, map[string][]string{"r2/areas": {"b3"}}, items)

	refuse := func(name, query, says string) {
		t.Helper()
		p := requireProblem(t, a.getAs(key, "/v1/records?"+query), http.StatusBadRequest, "invalid-request")
		require.Contains(t, p.Detail, says, name)
	}
	mid := a.getAs(key, "/v1/changes?limit=1")
	var midPage streamChangesDoc
	mid.JSON(t, &midPage)
	require.NotNil(t, midPage.NextCursor)
	refuse("garbage", "since=not-a-cursor", "changesCursor")
	refuse("empty", "since=", "changesCursor")
	refuse("a listing's nextCursor", "since="+url.QueryEscape(*midPage.NextCursor), "changesCursor")
	refuse("a feed's nextCursor", "since="+url.QueryEscape(*a.feedStep(key, 1, "").NextCursor), "changesCursor")
	refuse("with cursor", "since="+url.QueryEscape(listed)+"&cursor="+url.QueryEscape(*a.feedStep(key, 1, "").NextCursor), "pass one")
	refuse("twice", "since="+url.QueryEscape(listed)+"&since="+url.QueryEscape(listed), "at most once")
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, key), []auth.Grant{grant("r2", "cooling:read")}))
	refuse("issued before a grant", "since="+url.QueryEscape(listed), "grants changed")
}

// sinceWalk is a feed of what changed read to its last page by one
// face: its items, its streams (without their cursors, sealed anew at
// each answer) and the changesCursor of its last page.
type sinceWalk struct {
	items   []feedItemDoc
	streams []feedStreamDoc
	changes string
}

func (w *sinceWalk) add(t testing.TB, p feedPageDoc) {
	w.items = append(w.items, canonicalItems(t, p.Data)...)
	for _, s := range p.Streams {
		require.NotEmpty(t, s.ChangesCursor)
		s.ChangesCursor = ""
		w.streams = append(w.streams, s)
	}
	if p.NextCursor == nil {
		require.NotNil(t, p.ChangesCursor, "the last page carries changesCursor")
		w.changes = *p.ChangesCursor
	}
}

// walk_all_records takes since as GET /v1/records does, through its
// operation: from the same position it brings exactly the items and
// streams REST brings, paged by its nextCursor (sent alone, or taken on
// from a REST page), and its last page's changesCursor brings nothing
// more; an empty since is none (the whole feed). Refused as tool errors
// saying what REST's problems say, echoing neither the value nor the
// key: garbage, a nextCursor, since with cursor, and a position issued
// before the key's grants changed.
func TestRecordFeedSinceOverMCP(t *testing.T) {
	t.Parallel()
	a, key := sinceApp(t)
	position := a.readFeed(key, "", 500).changes
	a.put(key, "r1", "areas", "a1", "m-a1-2", area("a1 again"))
	a.tombstone(key, "r1", "areas", "a3", "m-a3-gone")
	a.put(key, "r1", "areas", "a9", "m-a9", area("a9"))
	a.put(key, "r2", "areas", "b2", "m-b2", area("b2"))
	a.putDelivery(key, "r1", "d2", time.Now().Add(-72*time.Hour))

	s := a.mcpConnect(t, key, rev2026)
	mcpPage := func(args map[string]any) feedPageDoc {
		t.Helper()
		var p feedPageDoc
		require.NoError(t, json.Unmarshal(s.ok("walk_all_records", args), &p))
		return p
	}
	restPage := func(q url.Values) feedPageDoc {
		t.Helper()
		var p feedPageDoc
		require.NoError(t, json.Unmarshal(a.restBody(key, "/v1/records?"+q.Encode()), &p))
		return p
	}
	for _, limit := range []int{1, 2, 500} {
		var rest, viaMCP, mixed sinceWalk
		p := restPage(url.Values{"since": {position}, "limit": {strconv.Itoa(limit)}})
		m := mcpPage(map[string]any{"since": position, "limit": limit})
		// Mixed: a REST first page, continued over MCP.
		x := p
		for pages := 0; ; pages++ {
			require.Less(t, pages, 100)
			rest.add(t, p)
			viaMCP.add(t, m)
			mixed.add(t, x)
			if p.NextCursor == nil || m.NextCursor == nil || x.NextCursor == nil {
				require.True(t, p.NextCursor == nil && m.NextCursor == nil && x.NextCursor == nil, "the faces end on the same page")
				break
			}
			p = restPage(url.Values{"cursor": {*p.NextCursor}, "limit": {strconv.Itoa(limit)}})
			m = mcpPage(map[string]any{"cursor": *m.NextCursor, "limit": limit})
			x = mcpPage(map[string]any{"cursor": *x.NextCursor, "limit": limit})
		}
		require.Len(t, rest.items, 5, "a1, -a3, a9, d2, b2 (limit %d)", limit)
		require.Equal(t, rest.items, viaMCP.items, "walk_all_records since= brings what GET /v1/records?since= does (limit %d)", limit)
		require.Equal(t, rest.streams, viaMCP.streams, "limit %d", limit)
		require.Equal(t, rest.items, mixed.items, "a REST nextCursor goes on over MCP (limit %d)", limit)
		again := mcpPage(map[string]any{"since": viaMCP.changes})
		require.Empty(t, again.Data, "nothing changed since the last page's changesCursor")
		require.Nil(t, again.NextCursor)
	}
	whole := mcpPage(map[string]any{"since": "", "limit": 500})
	require.Len(t, whole.Data, len(a.feedStep(key, 500, "").Data), "an empty since is none: the whole feed")

	secret := key[strings.IndexByte(key, '.')+1:]
	refuse := func(name string, args map[string]any, says string) {
		t.Helper()
		text := s.toolErr("walk_all_records", args)
		require.Contains(t, text, says, name)
		require.NotContains(t, text, secret, name)
		require.Equal(t, a.restDetail(key, "/v1/records?"+restQuery(args), http.StatusBadRequest), text, "%s: the detail REST's problem carries", name)
	}
	next := *a.feedStep(key, 1, "").NextCursor
	refuse("garbage", map[string]any{"since": "not-a-cursor"}, "changesCursor")
	refuse("a nextCursor", map[string]any{"since": next}, "changesCursor")
	refuse("with cursor", map[string]any{"since": position, "cursor": next}, "pass one")
	require.NotContains(t, s.toolErr("walk_all_records", map[string]any{"since": "sEcReT-vAlUe"}), "sEcReT-vAlUe", "the value is not echoed")
	require.Contains(t, s.toolErr("walk_all_records", map[string]any{"since": 7}), "must be a string")
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, key), []auth.Grant{grant("r2", "cooling:read")}))
	refuse("issued before a grant", map[string]any{"since": position}, "grants changed")
}

// restQuery is a tool's string arguments as a query string.
func restQuery(args map[string]any) string {
	q := url.Values{}
	for k, v := range args {
		q.Set(k, v.(string))
	}
	return q.Encode()
}
