package tests

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// receivedOf reads receivedAt and occurredAt of a delivery as the API
// sent it, requiring both to be digit strings.
func receivedOf(t *testing.T, raw json.RawMessage) (received, occurred int64) {
	t.Helper()
	var d struct {
		ReceivedAt *string `json:"receivedAt"`
		OccurredAt string  `json:"occurredAt"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotNil(t, d.ReceivedAt, "receivedAt is sent: %s", raw)
	r, err := strconv.ParseInt(*d.ReceivedAt, 10, 64)
	require.NoError(t, err, "receivedAt is a digit string: %s", raw)
	o, err := strconv.ParseInt(d.OccurredAt, 10, 64)
	require.NoError(t, err)
	return r, o
}

// A delivery uploaded hours after it was checked shows it: every answer
// carrying the delivery (the ingest PUT and its replay, the list, the one
// delivery, the delivery changes, the records feed, and the MCP tools
// that return deliveries) sends the same receivedAt, the time the service
// stored it, hours after occurredAt. receivedAt sent back in a PUT is the
// service's, ignored: the request is still the replay it was. A device
// clock a little ahead of the service's has its receivedAt raised to
// occurredAt, as a record's is to capturedAt.
func TestDeliveryReceivedAtShowsLateUploads(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "deliveries:write"))
	path := "/v1/ingest/restaurants/r1/deliveries/late-1"

	checked := time.Now().Add(-5 * time.Hour).UnixMilli()
	before := time.Now().UnixMilli()
	put := a.putJSON(key, path, deliveryJSON("late-1", checked))
	after := time.Now().UnixMilli()
	require.Equal(t, http.StatusOK, put.Status, "body: %s", put.Body)
	var written struct{ Data json.RawMessage }
	put.JSON(t, &written)
	received, occurred := receivedOf(t, written.Data)
	require.Equal(t, checked, occurred)
	require.GreaterOrEqual(t, received, before, "stored during the PUT")
	require.LessOrEqual(t, received, after, "stored during the PUT")
	require.GreaterOrEqual(t, received-occurred, (5 * time.Hour).Milliseconds(), "the late upload shows")

	// The replay answers the delivery as stored, receivedAt included; one
	// sent back (a delivery read from the API, PUT again) changes nothing.
	for _, body := range []map[string]any{deliveryJSON("late-1", checked), func() map[string]any {
		b := deliveryJSON("late-1", checked)
		b["receivedAt"] = "1"
		b["restaurantId"] = "r1"
		return b
	}()} {
		again := a.putJSON(key, path, body)
		require.Equal(t, http.StatusOK, again.Status, "body: %s", again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.JSONEq(t, string(put.Body), string(again.Body))
	}
	bad := deliveryJSON("late-1", checked)
	bad["receivedAt"] = "soon"
	requireProblem(t, a.putJSON(key, path, bad), http.StatusBadRequest, "invalid-request")

	// Checked two minutes ahead of the service's clock (within the skew
	// allowed): received "before" it was checked, so raised to it.
	ahead := time.Now().Add(2 * time.Minute).UnixMilli()
	early := a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/ahead-1", deliveryJSON("ahead-1", ahead))
	require.Equal(t, http.StatusOK, early.Status, "body: %s", early.Body)
	early.JSON(t, &written)
	aheadReceived, _ := receivedOf(t, written.Data)
	require.Equal(t, ahead, aheadReceived, "receivedAt is never before occurredAt")

	want := map[string]int64{"late-1": received, "ahead-1": ahead}
	requireAll := func(what string, items []json.RawMessage) {
		t.Helper()
		require.Len(t, items, len(want), what)
		for _, raw := range items {
			var d struct{ ID string }
			require.NoError(t, json.Unmarshal(raw, &d))
			got, _ := receivedOf(t, raw)
			require.Equal(t, want[d.ID], got, "%s: %s", what, d.ID)
		}
	}
	var list struct{ Data []json.RawMessage }
	require.NoError(t, json.Unmarshal(a.restBody(key, deliveriesPath("r1", window(checked-1000, ahead+1000, 0))), &list))
	requireAll("GET .../deliveries", list.Data)
	require.NoError(t, json.Unmarshal(a.restBody(key, "/v1/restaurants/r1/delivery-changes"), &list))
	requireAll("GET .../delivery-changes", list.Data)
	requireAll("GET .../deliveries/{id}", []json.RawMessage{a.restBody(key, "/v1/restaurants/r1/deliveries/late-1"),
		a.restBody(key, "/v1/restaurants/r1/deliveries/ahead-1")})
	var feed struct {
		Data []struct {
			Delivery json.RawMessage `json:"delivery"`
		}
	}
	require.NoError(t, json.Unmarshal(a.restBody(key, "/v1/records?limit=100"), &feed))
	var fed []json.RawMessage
	for _, it := range feed.Data {
		if it.Delivery != nil {
			fed = append(fed, it.Delivery)
		}
	}
	requireAll("GET /v1/records", fed)

	// The MCP tools answer the same, within their output schemas (ok
	// checks the structured output against them).
	s := a.mcpConnect(t, key, rev2026)
	require.NoError(t, json.Unmarshal(s.ok("list_deliveries", map[string]any{"restaurantId": "r1",
		"from": strconv.FormatInt(checked-1000, 10), "to": strconv.FormatInt(ahead+1000, 10)}), &list))
	requireAll("list_deliveries", list.Data)
	require.NoError(t, json.Unmarshal(s.ok("list_delivery_changes", map[string]any{"restaurantId": "r1"}), &list))
	requireAll("list_delivery_changes", list.Data)
	requireAll("get_delivery", []json.RawMessage{s.ok("get_delivery", map[string]any{"restaurantId": "r1", "deliveryId": "late-1"}),
		s.ok("get_delivery", map[string]any{"restaurantId": "r1", "deliveryId": "ahead-1"})})
	require.NoError(t, json.Unmarshal(s.ok("walk_all_records", map[string]any{}), &feed))
	fed = fed[:0]
	for _, it := range feed.Data {
		if it.Delivery != nil {
			fed = append(fed, it.Delivery)
		}
	}
	requireAll("walk_all_records", fed)
}
