package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/wire"
)

// Both lists of deliveries read the same, each under a count that says its
// order, with what a page says of the next one and of later changes.
func TestRenderTextOfDeliveries(t *testing.T) {
	next, changes := "n1", "c1"
	ds := []wire.Delivery{
		{ID: "d2", OccurredAt: 1767225600000, ReceivedAt: 1767225600000, Supplier: wire.Supplier{ID: "s1", Name: "Fresh Ltd"}, IsCompliant: true, ImageCount: 1},
		{ID: "d1", OccurredAt: 1767225500000, ReceivedAt: 1767236300000, Supplier: wire.Supplier{ID: "s2", Name: "Cold Co"},
			NonComplianceReasons: []string{"too warm"}, CorrectiveActions: []string{"returned"}},
	}
	for name, c := range map[string]struct {
		out  any
		want string
	}{
		"list, more to come": {wire.Page[wire.Delivery]{Data: ds, NextCursor: &next}, "2 deliveries, newest first:\n" +
			"- d2 at 1767225600000 [2026-01-01T00:00:00.000Z] (received 1767225600000 [2026-01-01T00:00:00.000Z]) from Fresh Ltd (s1): compliant; 1 photograph\n" +
			"- d1 at 1767225500000 [2025-12-31T23:58:20.000Z] (received 1767236300000 [2026-01-01T02:58:20.000Z]) from Cold Co (s2): NOT compliant; reasons: too warm; actions: returned; 0 photographs\n" +
			`More: call list_deliveries again with the same arguments and cursor "n1".`},
		"list, last page": {wire.Page[wire.Delivery]{Data: ds[:1]}, "1 delivery, newest first:\n" +
			"- d2 at 1767225600000 [2026-01-01T00:00:00.000Z] (received 1767225600000 [2026-01-01T00:00:00.000Z]) from Fresh Ltd (s1): compliant; 1 photograph\n" +
			"Last page (nextCursor is null)."},
		"changes, last page": {wire.ChangesPage[wire.Delivery]{Data: ds[1:], ChangesCursor: &changes}, "1 delivery, in the order received:\n" +
			"- d1 at 1767225500000 [2025-12-31T23:58:20.000Z] (received 1767236300000 [2026-01-01T02:58:20.000Z]) from Cold Co (s2): NOT compliant; reasons: too warm; actions: returned; 0 photographs\n" +
			"Last page (nextCursor is null).\n" +
			`To get only what changes from now on, call list_deliveries later with cursor "c1" (it never expires).`},
		"changes, none": {wire.ChangesPage[wire.Delivery]{Data: []wire.Delivery{}, NextCursor: &next}, "0 deliveries, in the order received:\n" +
			`More: call list_deliveries again with the same arguments and cursor "n1".`},
	} {
		require.Equal(t, c.want, renderText("list_deliveries", c.out), name)
	}
}

// Restaurants holding the same scopes in a row share one line: a key of
// many restaurants with one set of scopes reads as its ids and the set
// once, and a key whose restaurants differ reads as before, one a line.
func TestRenderTextOfRestaurants(t *testing.T) {
	all := []string{"areas:read", "deliveries:read"}
	out := wire.RestaurantList{Data: []wire.RestaurantGrant{
		{RestaurantID: "r1", Scopes: all}, {RestaurantID: "r2", Scopes: []string{"areas:read", "deliveries:read"}},
		{RestaurantID: "r3", Scopes: []string{"cooling:read"}}, {RestaurantID: "r4", Scopes: all},
	}}
	require.Equal(t, "4 restaurants this key reaches:\n- r1, r2: areas:read, deliveries:read\n- r3: cooling:read\n"+
		"- r4: areas:read, deliveries:read", renderText("list_restaurants", out))
	require.Equal(t, "0 restaurants this key reaches:", renderText("list_restaurants", wire.RestaurantList{Data: []wire.RestaurantGrant{}}))
	many := wire.RestaurantList{Data: make([]wire.RestaurantGrant, 20_000)}
	for i := range many.Data {
		many.Data[i] = wire.RestaurantGrant{RestaurantID: fmt.Sprintf("r%05d", i), Scopes: all}
	}
	text := renderText("list_restaurants", many)
	require.Equal(t, 2, strings.Count(text, "\n")+1)
	require.Less(t, len(text), 200_000)
}

// A collection's schema reads as what the collection is and the schema
// itself, for a model that sees only text.
func TestRenderTextOfCollectionSchema(t *testing.T) {
	out := wire.CollectionSchema{Collection: "areas", Description: "Zones of the restaurant.", ReadScope: "areas:read",
		DataSchema: []byte(`{"type":"object"}`)}
	require.Equal(t, "areas: Zones of the restaurant. Read scope areas:read; carries files: false. "+
		"The data of its records follows this JSON Schema (draft 2020-12):\n{\"type\":\"object\"}", renderText("describe_collection", out))
}
