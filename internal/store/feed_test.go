package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
)

// feedAll reads a whole feed, limit items and maxBytes per page, and
// returns its items as "restaurant/stream/id" in order, the pages and the
// streams ended.
func feedAll(t *testing.T, st *store.Store, groups []store.StreamGroup, limit, maxBytes int) (items []string, pages int, ended []store.FeedEnd) {
	t.Helper()
	at := store.FeedAt{}
	for ; ; pages++ {
		require.Less(t, pages, 10_000)
		p, err := st.RecordFeed(context.Background(), store.RecordFeedParams{Groups: groups, At: at, Limit: limit, MaxBytes: maxBytes})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Items), limit)
		for _, it := range p.Items {
			id := ""
			if it.Record != nil {
				id = it.Record.ID
			} else {
				id = it.Delivery.ID
			}
			items = append(items, it.RestaurantID+"/"+it.Stream+"/"+id)
		}
		ended = append(ended, p.Ended...)
		if p.Next == nil {
			return items, pages + 1, ended
		}
		require.NotEmpty(t, p.Items, "no empty page before the last")
		at = *p.Next
	}
}

// The feed's rounds: streams whose heads overstate their records (records
// updated many times), streams larger than a page, empty pages of a
// tiny byte budget (one item each, never none) and every limit return the
// same items in the same order, each stream ended once at its pin.
func TestRecordFeedRounds(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var restaurants []string
	for i := range 6 {
		restaurants = append(restaurants, fmt.Sprintf("r%d", i))
	}
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, restaurants)
	require.NoError(t, err)
	n := 0
	put := func(r, c, id string) {
		n++
		m := fmt.Sprintf("m%d", n)
		d := sha256.Sum256([]byte(m))
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: r, Collection: c, RecordID: id},
			MutationID: m, Data: []byte(`{"name":"x","isDeleted":false}`), CapturedAt: 7, PayloadVersion: 1, RequestSHA256: d[:]}, 11)
		require.NoError(t, err)
	}
	var want []string
	for i, r := range restaurants {
		// areas: one record updated 40 times (a head of 40, one item).
		for range 40 {
			put(r, "areas", "a1")
		}
		want = append(want, r+"/areas/a1")
		// products: 3*i+1 records, some streams longer than a page.
		for k := range 3*i + 1 {
			put(r, "products", fmt.Sprintf("p%02d", k))
			want = append(want, fmt.Sprintf("%s/products/p%02d", r, k))
		}
	}
	groups := []store.StreamGroup{{Restaurants: restaurants, Streams: []string{"areas", "products"}}}
	for _, limit := range []int{1, 2, 3, 5, 8, 13, 100, 500} {
		items, pages, ended := feedAll(t, st, groups, limit, 1<<20)
		require.Equal(t, want, items, "limit %d", limit)
		require.Equal(t, (len(want)+limit-1)/limit, pages, "limit %d: full pages", limit)
		require.Len(t, ended, 2*len(restaurants), "limit %d: each stream ended once", limit)
		for _, e := range ended {
			if e.Stream == "areas" {
				require.Equal(t, int64(40), e.Head, "the pin of a walk of it")
			}
		}
	}
	items, pages, _ := feedAll(t, st, groups, 500, 1)
	require.Equal(t, want, items, "a budget every item passes")
	require.Equal(t, len(want), pages, "one item a page, never none")

	// A position inside a stream the key does not read reads nothing of it.
	p, err := st.RecordFeed(ctx, store.RecordFeedParams{Groups: []store.StreamGroup{{Restaurants: []string{"r5"}, Streams: []string{"areas"}}},
		At: store.FeedAt{RestaurantID: "r1", Stream: "products", In: &store.WalkPos{Pinned: 100, After: 0}}, Limit: 500, MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.Len(t, p.Items, 1)
	require.Equal(t, "r5", p.Items[0].RestaurantID)
}
