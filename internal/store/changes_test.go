package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A page of GET /v1/changes is the same whichever way it is read: from
// the streams changed service-wide (a key of many restaurants, when few
// changed), or by probing the key's restaurants a window at a time; and
// both are what the rule says: the streams the key reads, written by a
// transaction the position's snapshot could not see, after the page's
// position, in (restaurant, stream) order. Checked against a model on
// 900 restaurants (600 granted, in three groups of scopes, beside others'
// restaurants) with random positions, snapshots and page sizes, so both
// the scan and its fallback run.
func TestStreamsChangedPagesAsTheRuleSays(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, testdb.URL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	rng := rand.New(rand.NewPCG(43, 3))

	type row struct {
		restaurant, stream string
		xact, head         int64
	}
	var rows []row
	var restaurants []string
	streams := []string{catalog.DeliveryStream, "areas", "cooling", "drive-files", "users"}
	for i := range 900 {
		// Ids whose bytewise order is not their locale order.
		r := fmt.Sprintf("r%03d", i)
		if i%7 == 0 {
			r = fmt.Sprintf("R%03d", i)
		}
		restaurants = append(restaurants, r)
		for _, s := range streams {
			if rng.IntN(4) > 0 {
				rows = append(rows, row{r, s, 100 + rng.Int64N(400), rng.Int64N(1000) + 1})
			}
		}
	}
	_, err = st.Pool().Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, restaurants)
	require.NoError(t, err)
	var rs, ss []string
	var heads, xacts []int64
	for _, r := range rows {
		rs, ss, heads, xacts = append(rs, r.restaurant), append(ss, r.stream), append(heads, r.head), append(xacts, r.xact)
	}
	_, err = st.Pool().Exec(ctx, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact)
		SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::bigint[]), unnest($4::bigint[])`, rs, ss, heads, xacts)
	require.NoError(t, err)
	// Three groups: everything, areas and deliveries, cooling alone; and
	// a restaurant of every third granted write scopes only.
	var grants []auth.Grant
	for i, r := range restaurants[:600] {
		switch i % 4 {
		case 0:
			grants = append(grants, auth.Grant{RestaurantID: r, Scopes: []string{"areas:read", "cooling:read", "deliveries:read", "drive-files:read", "users:read"}})
		case 1:
			grants = append(grants, auth.Grant{RestaurantID: r, Scopes: []string{"areas:read", "deliveries:read"}})
		case 2:
			grants = append(grants, auth.Grant{RestaurantID: r, Scopes: []string{"cooling:read", "areas:write"}})
		case 3:
			grants = append(grants, auth.Grant{RestaurantID: r, Scopes: []string{"areas:write"}})
		}
	}
	groups := auth.NewPrincipal(1, "k", grants).Streams().Groups
	require.Len(t, groups, 3)
	reads := map[string][]string{}
	for _, g := range groups {
		for _, r := range g.Restaurants {
			reads[r] = g.Streams
		}
	}
	model := func(p store.StreamsChangedParams) []store.StreamHead {
		var out []store.StreamHead
		for _, r := range rows {
			visible := r.xact < p.Since.Xmax && !slices.Contains(p.Since.Xip, r.xact)
			after := r.restaurant > p.AfterRestaurant || r.restaurant == p.AfterRestaurant && r.stream > p.AfterStream
			if r.xact >= p.Since.Xmin && !visible && after && slices.Contains(reads[r.restaurant], r.stream) {
				out = append(out, store.StreamHead{RestaurantID: r.restaurant, Stream: r.stream, Head: r.head})
			}
		}
		slices.SortFunc(out, func(a, b store.StreamHead) int {
			return strings.Compare(a.RestaurantID+"\x00"+a.Stream, b.RestaurantID+"\x00"+b.Stream)
		})
		return out[:min(len(out), p.Limit+1)]
	}

	scanned, fellBack := 0, 0
	for i := range 300 {
		xmin := 100 + rng.Int64N(420)
		xmax := xmin + rng.Int64N(30)
		var xip []int64
		for range rng.IntN(3) {
			xip = append(xip, xmin+rng.Int64N(xmax-xmin+1))
		}
		if i%10 == 0 {
			xmin, xmax, xip = 0, 0, nil // no position: every stream
		}
		p := store.StreamsChangedParams{Groups: groups, Since: store.Snapshot{Xmin: xmin, Xmax: xmax, Xip: xip},
			Limit: 1 + rng.IntN(100)}
		if rng.IntN(2) == 0 {
			a := rows[rng.IntN(len(rows))]
			p.AfterRestaurant, p.AfterStream = a.restaurant, a.stream
		}
		want := nonNil(model(p))
		what := fmt.Sprintf("case %d: %+v", i, p.Since)
		got, err := st.StreamsChanged(ctx, p)
		require.NoError(t, err, what)
		require.Equal(t, want, nonNil(got), what)
		if p.Since.Xip == nil {
			p.Since.Xip = []int64{}
		}
		got, err = store.StreamsChangedProbe(st, ctx, p)
		require.NoError(t, err, what)
		require.Equal(t, want, nonNil(got), what)
		if xmin > 0 {
			got, ok, err := store.StreamsChangedScan(st, ctx, p, 600)
			require.NoError(t, err, what)
			if ok {
				scanned++
				require.Equal(t, want, nonNil(got), what)
			} else {
				fellBack++
			}
		}
	}
	require.Positive(t, scanned, "some pages were read from the streams changed service-wide")
	require.Positive(t, fellBack, "some pages had more changes than restaurants, and were probed")
}

func nonNil(h []store.StreamHead) []store.StreamHead {
	if h == nil {
		return []store.StreamHead{}
	}
	return h
}
