package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

const (
	restA = "bistro-a"
	restB = "bistro-b"
)

// readScopes are what the fixture's reader keys hold on their restaurant.
var readScopes = []string{"areas:read", "cleaning-task-pictures:read", "deliveries:read", "delivery-images:read"}

// mcpFixture is two restaurants with the same kinds of data (five areas,
// one of them deleted; a picture with its uploaded file; three deliveries,
// one with a photograph) and a reader key for each.
type mcpFixture struct {
	a            *app
	keyA, keyB   string
	writer       string
	deliveryTo   int64
	deliveryFrom int64
}

func newMCPFixture(t *testing.T, opts ...appOption) *mcpFixture {
	t.Helper()
	now := time.UnixMilli(1_800_000_000_000)
	a := newApp(t, append([]appOption{withClock(func() time.Time { return now })}, opts...)...)
	a.addRestaurants(restA, restB)
	writes := []string{"areas:write", "cleaning-task-pictures:write", "deliveries:write", "delivery-images:write"}
	f := &mcpFixture{a: a, writer: a.newKey(grant(restA, writes...), grant(restB, writes...)),
		deliveryFrom: 1_700_000_000_000, deliveryTo: 1_700_000_900_000}
	for _, r := range []string{restA, restB} {
		for i := 1; i <= 5; i++ {
			a.put(f.writer, r, "areas", fmt.Sprintf("area-%d", i), fmt.Sprintf("m-%d", i), area(fmt.Sprintf("%s zone %d", r, i)))
		}
		del := a.ingest(f.writer, r, "areas", "area-3", "m-del", snapshot(r, "area-3", "m-del", 1_700_000_000_001, true, nil))
		require.Equal(t, http.StatusOK, del.Status, "%s", del.Body)
		a.put(f.writer, r, "cleaning-task-pictures", "pic-1", "pm-1", picture("photos/pic-1.jpg", nil))
		jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, []byte(r+" photo")...)
		up := a.upload(f.writer, assetPath(r, "cleaning-task-pictures", "pic-1", "photos/pic-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg)
		require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)
		for i := 1; i <= 3; i++ {
			a.seedDelivery(r, fmt.Sprintf("d%d", i), f.deliveryFrom+int64(i)*60_000)
		}
		img := a.upload(f.writer, "/v1/ingest/restaurants/"+r+"/deliveries/d1/images/img-1", "image/jpeg", digestHeader(jpeg), jpeg)
		require.Equal(t, http.StatusOK, img.Status, "%s", img.Body)
	}
	f.keyA = a.newKey(grant(restA, readScopes...))
	f.keyB = a.newKey(grant(restB, readScopes...))
	return f
}

// toolCase is one tool call and the REST GET that answers the same.
type toolCase struct {
	tool string
	args map[string]any
	path string
}

// everyTool calls each tool once on restaurant r.
func (f *mcpFixture) everyTool(r string) []toolCase {
	win := url.Values{"from": {fmt.Sprint(f.deliveryFrom)}, "to": {fmt.Sprint(f.deliveryTo)}, "limit": {"2"}}
	return []toolCase{
		{"list_collections", map[string]any{"restaurantId": r}, "/v1/restaurants/" + r + "/collections"},
		{"walk_records", map[string]any{"restaurantId": r, "collection": "areas", "limit": 2}, recordsPath(r, "areas") + "?limit=2"},
		{"get_record", map[string]any{"restaurantId": r, "collection": "areas", "recordId": "area-1"}, recordsPath(r, "areas") + "/area-1"},
		{"get_record", map[string]any{"restaurantId": r, "collection": "areas", "recordId": "area-3"}, recordsPath(r, "areas") + "/area-3"},
		{"list_assets", map[string]any{"restaurantId": r, "collection": "cleaning-task-pictures", "recordId": "pic-1"},
			assetsPath(r, "cleaning-task-pictures", "pic-1")},
		{"list_deliveries", map[string]any{"restaurantId": r, "from": fmt.Sprint(f.deliveryFrom), "to": fmt.Sprint(f.deliveryTo), "limit": 2},
			deliveriesPath(r, win)},
		{"get_delivery", map[string]any{"restaurantId": r, "deliveryId": "d2"}, "/v1/restaurants/" + r + "/deliveries/d2"},
		{"list_delivery_images", map[string]any{"restaurantId": r, "deliveryId": "d1"}, "/v1/restaurants/" + r + "/deliveries/d1/images"},
	}
}

// Every revision the SDK speaks works end to end, and every tool answers
// exactly what its REST route answers: the same records, the same keys.
func TestMCPToolsAnswerAsREST(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	for _, rev := range []string{rev2026, rev1125, rev0618} {
		t.Run(rev, func(t *testing.T) {
			s := f.a.mcpConnect(t, f.keyA, rev)
			require.ElementsMatch(t, []string{"list_restaurants", "list_changes", "walk_all_records", "list_collections", "walk_records", "get_record", "list_assets",
				"describe_collection", "list_deliveries", "list_delivery_changes", "get_delivery", "list_delivery_images"}, s.toolNames())

			out := s.ok("list_restaurants", nil)
			require.JSONEq(t, string(f.a.restBody(f.keyA, "/v1/restaurants")), string(out))
			for _, c := range f.everyTool(restA) {
				out := s.ok(c.tool, c.args)
				require.JSONEq(t, string(f.a.restBody(f.keyA, c.path)), string(out), "%s %v", c.tool, c.args)
			}
		})
	}
}

// A walk to the end over MCP, and cursors crossing faces: a REST cursor
// continues in MCP and an MCP cursor continues over REST.
func TestMCPWalkAndCursorsAcrossFaces(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	s := f.a.mcpConnect(t, f.keyA, rev2026)

	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "the walk ends")
		args := map[string]any{"restaurantId": restA, "collection": "areas", "limit": 2}
		if cursor != "" {
			args["cursor"] = cursor
		}
		var p walkPage
		require.NoError(t, json.Unmarshal(s.ok("walk_records", args), &p))
		ids = append(ids, names(t, p.Data)...)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	require.Equal(t, names(t, f.a.walkAll(f.keyA, restA, "areas", 2)), ids)
	require.Len(t, ids, 5, "the tombstone is part of the walk")

	rest := f.a.walkStep(f.keyA, restA, "areas", 2, "")
	var mcpNext walkPage
	require.NoError(t, json.Unmarshal(s.ok("walk_records", map[string]any{"restaurantId": restA, "collection": "areas", "limit": 2,
		"cursor": *rest.NextCursor}), &mcpNext))
	require.Equal(t, names(t, f.a.walkStep(f.keyA, restA, "areas", 2, *rest.NextCursor).Data), names(t, mcpNext.Data))
	require.Equal(t, names(t, f.a.walkStep(f.keyA, restA, "areas", 2, *mcpNext.NextCursor).Data), ids[4:])

	// The text rendering keeps the digit strings and adds the date.
	r := s.call("get_record", map[string]any{"restaurantId": restA, "collection": "areas", "recordId": "area-1"})
	require.Contains(t, r.Text, "1700000000000 [2023-11-14T22:13:20.000Z]")
	var e envelopeDoc
	require.NoError(t, json.Unmarshal(r.Structured, &e))
	require.Equal(t, "1700000000000", e.CapturedAt, "structured timestamps stay digit strings")
}

// MCP's default page is 20 records and its largest 100, like REST's.
func TestMCPPageSizes(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	seedRecordsSQL(t, dbURL, "r1", "areas", 130)
	a := newApp(t, withDatabaseURL(dbURL))
	key := a.newKey(grant("r1", "areas:read"))
	s := a.mcpConnect(t, key, rev2026)
	for _, c := range []struct {
		limit any
		want  int
	}{{nil, 20}, {100, 100}, {1, 1}} {
		args := map[string]any{"restaurantId": "r1", "collection": "areas"}
		if c.limit != nil {
			args["limit"] = c.limit
		}
		var p walkPage
		require.NoError(t, json.Unmarshal(s.ok("walk_records", args), &p))
		require.Len(t, p.Data, c.want, "limit %v", c.limit)
		require.NotNil(t, p.NextCursor)
	}
}

// Key A never reads restaurant B through any tool, and what it hears for
// B is byte for byte what it hears for a restaurant that does not exist.
func TestMCPTwoTenants(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	for _, rev := range []string{rev2026, rev0618} {
		t.Run(rev, func(t *testing.T) {
			s := f.a.mcpConnect(t, f.keyA, rev)
			var grants struct {
				Data []struct{ RestaurantID string }
			}
			require.NoError(t, json.Unmarshal(s.ok("list_restaurants", map[string]any{}), &grants))
			require.Len(t, grants.Data, 1)
			require.Equal(t, restA, grants.Data[0].RestaurantID)

			ungranted, missing := f.everyTool(restB), f.everyTool("no-such-restaurant")
			for i, c := range ungranted {
				forB := s.call(c.tool, c.args)
				forNone := s.call(missing[i].tool, missing[i].args)
				require.True(t, forB.IsError, "%s on B", c.tool)
				require.Equal(t, apperr.NotFoundDetail, forB.Text)
				require.Empty(t, forB.Structured)
				b, err := json.Marshal(forB.Raw)
				require.NoError(t, err)
				n, err := json.Marshal(forNone.Raw)
				require.NoError(t, err)
				require.Equal(t, string(n), string(b), "%s: ungranted and nonexistent restaurants read the same", c.tool)
				require.Equal(t, f.a.restDetail(f.keyA, c.path, http.StatusNotFound), forB.Text, "the REST 404's detail")
			}
			// Nothing of B reached A: no id, no name of B's data in any answer.
			for _, c := range f.everyTool(restA) {
				require.NotContains(t, string(s.ok(c.tool, c.args)), restB)
			}
		})
	}
}

// Every kind of bad argument is a tool error naming the argument, with
// the detail REST's problem carries for the same mistake; none is a 500.
func TestMCPBadArguments(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	s := f.a.mcpConnect(t, f.keyA, rev2026)
	walk := func(kv ...any) map[string]any {
		m := map[string]any{"restaurantId": restA, "collection": "areas"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	window := func(from, to any) map[string]any {
		return map[string]any{"restaurantId": restA, "from": from, "to": to}
	}
	deliveryCursor := *f.a.walkDeliveriesFirstOf(f.keyA, restA, f.deliveryFrom, f.deliveryTo)
	walkCursor := *f.a.walkStep(f.keyA, restA, "areas", 2, "").NextCursor
	from, to := fmt.Sprint(f.deliveryFrom), fmt.Sprint(f.deliveryTo)
	for name, c := range map[string]struct {
		tool string
		args any
		arg  string
		// rest is the REST request making the same mistake, when REST can.
		rest string
	}{
		"limit 0":                {"walk_records", walk("limit", 0), "limit", recordsPath(restA, "areas") + "?limit=0"},
		"limit 101":              {"walk_records", walk("limit", 101), "limit", recordsPath(restA, "areas") + "?limit=101"},
		"limit not integral":     {"walk_records", walk("limit", 2.5), "limit", recordsPath(restA, "areas") + "?limit=2.5"},
		"limit as a string":      {"walk_records", walk("limit", "5"), "limit", ""},
		"restaurant as a number": {"walk_records", walk("restaurantId", 42), "restaurantId", ""},
		"unknown collection": {"walk_records", walk("collection", "fridges"), "collection",
			recordsPath(restA, "fridges")},
		"collection as a list":   {"walk_records", walk("collection", []string{"areas"}), "collection", ""},
		"missing collection":     {"walk_records", map[string]any{"restaurantId": restA}, "collection", ""},
		"unknown argument":       {"walk_records", walk("since", "1"), "since", ""},
		"garbage cursor":         {"walk_records", walk("cursor", "not-a-cursor"), "cursor", recordsPath(restA, "areas") + "?cursor=not-a-cursor"},
		"cursor of another walk": {"walk_records", walk("cursor", walkCursor), "cursor", recordsPath(restA, "areas") + "?limit=3&cursor=" + walkCursor},
		"delivery cursor in a walk": {"walk_records", walk("cursor", deliveryCursor), "cursor",
			recordsPath(restA, "areas") + "?cursor=" + deliveryCursor},
		"unknown collection on get": {"get_record", map[string]any{"restaurantId": restA, "collection": "x", "recordId": "a"}, "collection",
			recordsPath(restA, "x") + "/a"},
		"timestamp not digits": {"list_deliveries", window("yesterday", to), "from",
			deliveriesPath(restA, url.Values{"from": {"yesterday"}, "to": {to}})},
		"timestamp as a fraction":  {"list_deliveries", window(json.Number(from+".5"), to), "from", ""},
		"timestamp as an exponent": {"list_deliveries", window(json.Number("1e12"), to), "from", ""},
		"negative timestamp":       {"list_deliveries", window(json.Number("-1"), to), "from", ""},
		"timestamp as a bool":      {"list_deliveries", window(true, to), "from", ""},
		"inverted range": {"list_deliveries", window(to, from), "to",
			deliveriesPath(restA, url.Values{"from": {to}, "to": {from}})},
		"range over a year": {"list_deliveries", window("0", "31708800001"), "to",
			deliveriesPath(restA, url.Values{"from": {"0"}, "to": {"31708800001"}})},
		"missing to": {"list_deliveries", map[string]any{"restaurantId": restA, "from": from}, "to", ""},
		"delivery limit 0": {"list_deliveries", map[string]any{"restaurantId": restA, "from": from, "to": to, "limit": 0}, "limit",
			deliveriesPath(restA, url.Values{"from": {from}, "to": {to}, "limit": {"0"}})},
		"arguments not an object": {"list_restaurants", "everything", "", ""},
		"argument of no tool":     {"list_restaurants", map[string]any{"restaurantId": restA}, "restaurantId", ""},
	} {
		t.Run(name, func(t *testing.T) {
			text := s.as(t).toolErr(c.tool, c.args)
			if c.arg != "" {
				require.Contains(t, text, fmt.Sprintf("parameter %q", c.arg))
			}
			if c.rest != "" {
				require.Equal(t, f.a.restDetail(f.keyA, c.rest, http.StatusBadRequest), text, "REST's detail for the same mistake")
			}
		})
	}
	require.NotContains(t, f.a.logs.String(), `"status":500`)
	require.NotContains(t, f.a.logs.String(), `"level":"ERROR"`)
}

// walkDeliveriesFirstOf returns a genuine delivery cursor (limit 1).
func (a *app) walkDeliveriesFirstOf(key, restaurant string, from, to int64) *string {
	a.t.Helper()
	var p deliveryPage
	a.getAs(key, deliveriesPath(restaurant, window(from, to, 1))).JSON(a.t, &p)
	require.NotNil(a.t, p.NextCursor)
	return p.NextCursor
}

// A missing scope is said, naming the scope; a tool the key cannot use
// anywhere is not listed and cannot be called.
func TestMCPToolsFollowScopes(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	a := f.a
	for name, c := range map[string]struct {
		key   string
		tools []string
	}{
		"deliveries only": {a.newKey(grant(restA, "deliveries:read")),
			[]string{"list_restaurants", "list_changes", "walk_all_records", "list_deliveries", "list_delivery_changes", "get_delivery"}},
		"images on another restaurant than deliveries": {a.newKey(grant(restA, "deliveries:read"), grant(restB, "delivery-images:read")),
			[]string{"list_restaurants", "list_changes", "walk_all_records", "list_deliveries", "list_delivery_changes", "get_delivery"}},
		"deliveries and images": {a.newKey(grant(restA, "deliveries:read", "delivery-images:read")),
			[]string{"list_restaurants", "list_changes", "walk_all_records", "list_deliveries", "list_delivery_changes", "get_delivery", "list_delivery_images"}},
		"one collection without files": {a.newKey(grant(restA, "areas:read")),
			[]string{"list_restaurants", "list_changes", "walk_all_records", "list_collections", "walk_records", "get_record", "describe_collection"}},
		"a collection with files": {a.newKey(grant(restA, "drive-files:read")),
			[]string{"list_restaurants", "list_changes", "walk_all_records", "list_collections", "walk_records", "get_record", "describe_collection", "list_assets"}},
		"writes only": {a.newKey(grant(restA, "areas:write", "deliveries:write")), []string{"list_restaurants", "list_changes", "walk_all_records"}},
	} {
		t.Run(name, func(t *testing.T) {
			s := a.mcpConnect(t, c.key, rev1125)
			require.ElementsMatch(t, c.tools, s.toolNames())
			for _, hidden := range []string{"walk_records", "describe_collection", "list_deliveries", "list_delivery_images", "list_assets"} {
				if slices.Contains(c.tools, hidden) {
					continue
				}
				_, err := s.callErr(hidden, map[string]any{"restaurantId": restA})
				require.ErrorContains(t, err, "unknown tool")
			}
		})
	}

	// Scopes on different restaurants: each tool needs its scope on the
	// restaurant it reads, and says which one is missing.
	mixed := a.newKey(grant(restA, "deliveries:read"), grant(restB, "areas:read", "deliveries:read", "delivery-images:read"))
	s := a.mcpConnect(t, mixed, rev2026)
	text := s.toolErr("walk_records", map[string]any{"restaurantId": restA, "collection": "areas"})
	require.Equal(t, "This key does not hold the scope areas:read for this restaurant.", text)
	require.Equal(t, a.restDetail(mixed, recordsPath(restA, "areas"), http.StatusForbidden), text)
	text = s.toolErr("list_delivery_images", map[string]any{"restaurantId": restA, "deliveryId": "d1"})
	require.Equal(t, "This key does not hold the scope delivery-images:read for this restaurant.", text)
	require.Contains(t, s.toolErr("walk_records", map[string]any{"restaurantId": restB, "collection": "nope"}), `parameter "collection"`,
		"an unknown collection is said before the missing scope")
	s.ok("walk_records", map[string]any{"restaurantId": restB, "collection": "areas"})
	var empty struct{ Data []any }
	require.NoError(t, json.Unmarshal(s.ok("list_collections", map[string]any{"restaurantId": restA}), &empty))
	require.Empty(t, empty.Data, "no collection readable there: an empty list, not an error")
}

// Revoking a key stops its next MCP request, whatever revision; the
// refusal is the REST API's 401.
func TestMCPRevocation(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	for _, rev := range []string{rev2026, rev1125} {
		t.Run(rev, func(t *testing.T) {
			key := f.a.newKey(grant(restA, readScopes...))
			s := f.a.mcpConnect(t, key, rev)
			s.ok("list_restaurants", nil)
			_, err := f.a.store().KeyRevoke(context.Background(), publicID(t, key))
			require.NoError(t, err)
			_, err = s.callErr("list_restaurants", nil)
			require.Error(t, err)
			last := s.wire.last()
			require.Equal(t, http.StatusUnauthorized, last.Status)
			require.Contains(t, last.RHeader.Get("WWW-Authenticate"), "Bearer")
			require.Equal(t, "application/problem+json", last.RHeader.Get("Content-Type"))

			_, err = f.a.mcpDial(key, rev)
			require.Error(t, err, "a revoked key cannot connect")
		})
	}
}

// A mobile session token works over MCP as its key does, narrowed the way
// the token is.
func TestMCPSessionToken(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	device := f.a.newKey(grant(restA, "areas:write", "areas:read"), grant(restB, "areas:write", "areas:read"))
	r := f.a.openSession(device, map[string]any{"restaurantId": restA})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var sess sessionDoc
	r.JSON(t, &sess)

	s := f.a.mcpConnect(t, sess.AccessToken, rev2026)
	require.JSONEq(t, string(f.a.restBody(sess.AccessToken, "/v1/restaurants")), string(s.ok("list_restaurants", nil)))
	require.JSONEq(t, string(f.a.restBody(device, recordsPath(restA, "areas")+"?limit=20")),
		string(s.ok("walk_records", map[string]any{"restaurantId": restA, "collection": "areas"})))
	require.Equal(t, apperr.NotFoundDetail, s.toolErr("walk_records", map[string]any{"restaurantId": restB, "collection": "areas"}),
		"the token is narrowed to restaurant A")
	require.NotContains(t, f.a.logs.String(), secretOf(sess.AccessToken))
}

// Every MCP request counts against the key's budget, shared with REST;
// over it, the HTTP answer is the 429 problem with Retry-After, and the
// client's session survives it.
func TestMCPRateLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(4))
	a.addRestaurants(restA)
	key := a.newKey(grant(restA, readScopes...))
	s := a.mcpConnect(t, key, rev2026) // server/discover: 1
	s.ok("list_restaurants", nil)      // 2, and tools/list for the schema: 3
	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
	_, err := s.callErr("list_restaurants", nil)
	require.Error(t, err)
	last := s.wire.last()
	require429(t, response{Status: last.Status, Header: last.RHeader, Body: last.RBody})
	require429(t, a.getAs(key, "/v1/restaurants"))
	require.NotContains(t, a.logs.String(), `"status":500`)
}

// The transport's own failures are problem documents; a wrong method is
// the 405 of every other route.
func TestMCPHTTPFailures(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t, withConfig(func(c *config.Config) { c.MaxBodyBytes = 4096 }))
	a, key := f.a, f.keyA
	mcpPost := func(body string, kv ...string) response {
		h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

	r := mcpPost(list)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), `"walk_records"`, "a bare tools/list works without a handshake")

	for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
		r := a.do(req{Method: m, Path: "/mcp", Header: map[string]string{"Authorization": "Bearer " + key}})
		requireProblem(t, r, http.StatusMethodNotAllowed, "method-not-allowed")
		require.Equal(t, "POST", r.Header.Get("Allow"))
	}
	r = mcpPost(list, "Authorization", "")
	requireProblem(t, r, http.StatusUnauthorized, "unauthorized")
	require.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")
	requireProblem(t, mcpPost(list, "Authorization", "Bearer fsk_aaaaaaaaaaaaaaaa.nope"), http.StatusUnauthorized, "unauthorized")

	for name, c := range map[string]struct {
		r      response
		status int
		code   string
		detail string
	}{
		"not JSON":        {mcpPost(list, "Content-Type", "text/plain"), 400, "invalid-request", "Content-Type must be application/json."},
		"no Accept":       {mcpPost(list, "Accept", ""), 400, "invalid-request", "MCP transport: Accept must contain both"},
		"malformed body":  {mcpPost(`{"jsonrpc":`), 400, "invalid-request", "MCP transport: malformed payload"},
		"empty body":      {mcpPost(``), 400, "invalid-request", "MCP transport: POST requires a non-empty body"},
		"unknown version": {mcpPost(list, "MCP-Protocol-Version", "1999-01-01"), 400, "invalid-request", "Unsupported protocol version"},
		"too large":       {mcpPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 5000) + `"}}`), 413, "payload-too-large", "4096 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, c.r, c.status, c.code)
			require.Contains(t, p.Detail, c.detail)
		})
	}

	// Protocol errors are JSON-RPC errors, never problems.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	r = mcpPost(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{},`+meta+`}}`,
		"MCP-Protocol-Version", rev2026, "Mcp-Method", "tools/call", "Mcp-Name", "nope")
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Contains(t, string(r.Body), `"error"`)
	r = mcpPost(`{"jsonrpc":"2.0","id":3,"method":"nope/x","params":{`+meta+`}}`, "MCP-Protocol-Version", rev2026, "Mcp-Method", "nope/x")
	require.Equal(t, http.StatusNotFound, r.Status, "%s", r.Body)
	require.Contains(t, string(r.Body), "-32601")
	require.NotContains(t, a.logs.String(), `"status":500`)
}

// MCP requests are audited as /mcp with the method and tool in the
// outcome and the restaurant of the call; no secret reaches the trail or
// the logs.
func TestMCPAudit(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t, withConfig(func(c *config.Config) { c.AuditFlushInterval = time.Hour }))
	key := f.a.newKey(grant(restA, readScopes...))
	s := f.a.mcpConnect(t, key, rev2026)
	s.ok("walk_records", map[string]any{"restaurantId": restA, "collection": "areas"})
	s.toolErr("walk_records", map[string]any{"restaurantId": restB, "collection": "areas"})
	s.ok("list_restaurants", nil)
	_, err := s.callErr("no_such_tool", nil)
	require.ErrorContains(t, err, "unknown tool")
	_ = s.Close()

	events := flushedAudit(t, f.a)
	var outcomes []string
	for _, e := range events {
		if e.Route != "/mcp" {
			continue
		}
		require.Equal(t, publicID(t, key), e.KeyPublicID)
		require.Equal(t, "POST", e.Method)
		require.Contains(t, []int{200, 400}, e.Status, "an unknown tool is HTTP 400 at protocol 2026-07-28")
		outcomes = append(outcomes, e.Outcome+"@"+e.RestaurantID)
	}
	slices.Sort(outcomes)
	require.Equal(t, []string{"server/discover@", "tools/call list_restaurants@", "tools/call no_such_tool (protocol error)@",
		"tools/call walk_records (tool error)@" + restB, "tools/call walk_records@" + restA, "tools/list@"}, outcomes)
	all := f.a.logs.String()
	require.Contains(t, all, `"route":"/mcp"`)
	require.Contains(t, all, `"mcp":"tools/call walk_records (tool error)"`, "the access log names the tool")
	for _, k := range []string{key, f.keyA, f.keyB, f.writer} {
		require.NotContains(t, all, secretOf(k))
	}
	b, err := json.Marshal(events)
	require.NoError(t, err)
	require.False(t, bytes.Contains(b, []byte(secretOf(key))))
}

// Keys of two tenants calling at once, over both revisions, share the
// servers of their tool set and still each read only their own data (the
// caller travels in the request, never in a shared server).
func TestMCPConcurrentTenants(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	type result struct {
		want string
		body string
		err  error
	}
	var sessions []*mcpSession
	var wants []string
	for i, rev := range []string{rev2026, rev1125, rev2026, rev0618} {
		key, r := f.keyA, restA
		if i%2 == 1 {
			key, r = f.keyB, restB
		}
		sessions = append(sessions, f.a.mcpConnect(t, key, rev))
		wants = append(wants, r)
	}
	results := make([][]result, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				res, err := s.callErr("walk_records", map[string]any{"restaurantId": wants[i], "collection": "areas"})
				results[i] = append(results[i], result{want: wants[i], body: string(res.Structured), err: err})
			}
		}()
	}
	wg.Wait()
	for i := range results {
		require.Len(t, results[i], 10)
		for _, r := range results[i] {
			require.NoError(t, r.err)
			other := restB
			if r.want == restB {
				other = restA
			}
			require.Contains(t, r.body, `"restaurantId":"`+r.want+`"`)
			require.NotContains(t, r.body, other)
		}
	}
}

// Timestamps are strings of digits, yet MCP clients and models send them as
// JSON numbers: a JSON integer of the same digits is the same argument and
// answers exactly as the string does (outputs stay strings).
func TestMCPTimestampsAsIntegers(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	for _, rev := range []string{rev2026, "2025-06-18"} {
		s := f.a.mcpConnect(t, f.keyA, rev)
		asStrings := s.ok("list_deliveries", map[string]any{"restaurantId": restA,
			"from": fmt.Sprint(f.deliveryFrom), "to": fmt.Sprint(f.deliveryTo), "limit": 1})
		asNumbers := s.ok("list_deliveries", map[string]any{"restaurantId": restA,
			"from": f.deliveryFrom, "to": f.deliveryTo, "limit": 1})
		require.JSONEq(t, string(asStrings), string(asNumbers), rev)
		require.Contains(t, string(asNumbers), `"occurredAt":"`, "outputs stay strings")
		var p struct{ NextCursor *string }
		require.NoError(t, json.Unmarshal(asNumbers, &p))
		require.NotNil(t, p.NextCursor)
		// The cursor binds the same window whichever form it was given in.
		next := s.ok("list_deliveries", map[string]any{"restaurantId": restA,
			"from": fmt.Sprint(f.deliveryFrom), "to": f.deliveryTo, "limit": 1, "cursor": *p.NextCursor})
		require.Contains(t, string(next), `"data":[{`)
	}
}

// An unknown JSON-RPC method is a JSON-RPC "method not found" error
// (-32601) carrying the call's id, under every protocol revision, never a
// problem document: MCP clients read JSON-RPC errors.
func TestMCPUnknownMethodIsMethodNotFound(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	post := func(body string, kv ...string) response {
		h := map[string]string{"Authorization": "Bearer " + f.keyA, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream"}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return f.a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
	}
	for _, rev := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run("revision "+rev, func(t *testing.T) {
			kv := []string{}
			if rev != "" {
				kv = append(kv, "MCP-Protocol-Version", rev)
			}
			for _, id := range []string{`7`, `"call-7"`} {
				r := post(`{"jsonrpc":"2.0","id":`+id+`,"method":"resources/nope","params":{}}`, kv...)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				require.Equal(t, "application/json", r.Header.Get("Content-Type"))
				var res struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				r.JSON(t, &res)
				require.Equal(t, "2.0", res.JSONRPC)
				require.JSONEq(t, id, string(res.ID))
				require.Equal(t, -32601, res.Error.Code)
				require.Contains(t, res.Error.Message, "resources/nope")
			}
			// A notification of an unknown method has no id to answer: the
			// transport refuses it (MCP: an HTTP error status).
			requireProblem(t, post(`{"jsonrpc":"2.0","method":"notifications/nope"}`, kv...), http.StatusBadRequest, "invalid-request")
		})
	}
	require.NotContains(t, f.a.logs.String(), `"status":500`)
}

// list_restaurants of a key of 3,000 restaurants (an answer of some 2 MB,
// beyond which MCP answers wait their turn in a budget of bytes being
// encoded) answers every restaurant as REST does, with the restaurants
// that hold the same scopes on one line of text; eight at once all answer,
// and the budget is given back after each.
func TestMCPListRestaurantsOfALargeKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	const n = 3000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%04d", i)
	}
	_, err := a.store().Pool().Exec(context.Background(), `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(t, err)
	var reads []string
	for _, sc := range catalog.Scopes() {
		if strings.HasSuffix(sc, ":read") {
			reads = append(reads, sc)
		}
	}
	var grants []auth.Grant
	for _, id := range ids {
		grants = append(grants, grant(id, reads...))
	}
	key := a.newKey(grants...)
	rest := a.restBody(key, "/v1/restaurants")
	require.Greater(t, len(rest), 1<<20)

	s := a.mcpConnect(t, key, rev2026)
	r := s.call("list_restaurants", map[string]any{})
	require.False(t, r.IsError, r.Text)
	require.JSONEq(t, string(rest), string(r.Structured))
	require.Equal(t, fmt.Sprintf("%d restaurants this key reaches:\n- %s: %s", n, strings.Join(ids, ", "), strings.Join(reads, ", ")), r.Text)

	results := make([]toolResult, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.callErr("list_restaurants", map[string]any{})
		}()
	}
	wg.Wait()
	for i := range results {
		require.NoError(t, errs[i])
		require.False(t, results[i].IsError, results[i].Text)
		require.Equal(t, len(r.Structured), len(results[i].Structured))
	}
	// And again, one at a time: nothing of the budget was kept.
	require.False(t, s.call("list_restaurants", map[string]any{}).IsError)
}

// A key sent where MCP names something (a tool, a method, a prompt, a
// resource, the Mcp-Name header of protocol 2026-07-28) never comes back
// in the JSON-RPC error that quotes it, at any revision: the error names
// the key's public id, its secret redacted.
func TestMCPErrorsNeverEchoACredential(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read"))
	secret := secretOf(key)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(body string, kv ...string) response {
		h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return a.do(req{Method: http.MethodPost, Path: "/mcp", Header: h, Body: strings.NewReader(body)})
	}
	tool := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + key + `","arguments":{}}}`
	method := `{"jsonrpc":"2.0","id":2,"method":"` + key + `","params":{}}`
	for name, r := range map[string]response{
		"a tool, no revision":         post(tool),
		"a method, no revision":       post(method),
		"a tool, " + rev0618:          post(tool, "MCP-Protocol-Version", rev0618),
		"a method, " + rev0618:        post(method, "MCP-Protocol-Version", rev0618),
		"a tool, " + rev1125:          post(tool, "MCP-Protocol-Version", rev1125),
		"a prompt":                    post(`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"` + key + `"}}`),
		"a resource":                  post(`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"` + key + `"}}`),
		"a tool, " + rev2026:          post(strings.Replace(tool, `"arguments":{}`, `"arguments":{},`+meta, 1), "MCP-Protocol-Version", rev2026, "Mcp-Method", "tools/call", "Mcp-Name", key),
		"a tool, a header mismatch":   post(strings.Replace(tool, `"arguments":{}`, `"arguments":{},`+meta, 1), "MCP-Protocol-Version", rev2026, "Mcp-Method", "tools/call", "Mcp-Name", "x"),
		"a method, " + rev2026:        post(strings.Replace(method, `"params":{}`, `"params":{`+meta+`}`, 1), "MCP-Protocol-Version", rev2026, "Mcp-Method", key),
		"a method, a header mismatch": post(strings.Replace(method, `"params":{}`, `"params":{`+meta+`}`, 1), "MCP-Protocol-Version", rev2026, "Mcp-Method", "x"),
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, "application/json", r.Header.Get("Content-Type"), "%d %s", r.Status, r.Body)
			require.Contains(t, string(r.Body), `"error"`)
			require.NotContains(t, string(r.Body), secret)
			require.Contains(t, string(r.Body), publicID(t, key)+".[redacted]", "the public id stays quotable")
		})
	}
}
