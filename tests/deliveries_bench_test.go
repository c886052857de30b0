package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// BenchmarkDeliveryListPage shows that a page of the delivery list costs
// the same at any depth of a 100,000-delivery restaurant: keyset
// pagination starts the index scan at the cursor instead of skipping rows.
// `make bench` runs it; compare ns/op across depths.
func BenchmarkDeliveryListPage(b *testing.B) {
	const total, limit = 100_000, 50
	dbURL := testdb.URL(b)
	seedDeliveriesSQL(b, dbURL, total, 1)
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(b, err)
	b.Cleanup(st.Close)

	depths := []int{0, total / 2, total - limit}
	for _, depth := range depths {
		var after *store.DeliveryPos
		if depth > 0 {
			var pos store.DeliveryPos
			require.NoError(b, st.Pool().QueryRow(ctx, `SELECT occurred_at, id FROM deliveries WHERE restaurant_id = 'r1'
				ORDER BY occurred_at DESC, id DESC OFFSET $1 LIMIT 1`, depth-1).Scan(&pos.OccurredAt, &pos.ID))
			after = &pos
		}
		b.Run(fmt.Sprintf("store/depth=%d", depth), func(b *testing.B) {
			for b.Loop() {
				page, _, err := st.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: "r1", To: 1 << 62, Limit: limit, After: after})
				if err != nil || len(page) != limit {
					b.Fatalf("page: %d rows, %v", len(page), err)
				}
			}
		})
	}

	// The same over HTTP, with real cursors collected by one full walk.
	a := newApp(b, withDatabaseURL(dbURL))
	key := a.newKey(grant("r1", "deliveries:read"))
	cursors := map[int]string{}
	// The seed spans about 23 days from 1700000000000; a 300-day window covers it.
	window := url.Values{"from": {"1700000000000"}, "to": {"1725920000000"}, "limit": {fmt.Sprint(limit)}}
	q := cloneValues(window)
	for seen := 0; ; {
		for _, d := range depths {
			if d == seen {
				cursors[d] = q.Get("cursor")
			}
		}
		var p deliveryPage
		r := a.getAs(key, deliveriesPath("r1", q))
		require.Equal(b, http.StatusOK, r.Status, "%s", r.Body)
		r.JSON(b, &p)
		seen += len(p.Data)
		if p.NextCursor == nil {
			break
		}
		q.Set("cursor", *p.NextCursor)
	}
	for _, depth := range depths {
		b.Run(fmt.Sprintf("http/depth=%d", depth), func(b *testing.B) {
			q := cloneValues(window)
			if c := cursors[depth]; c != "" {
				q.Set("cursor", c)
			}
			path := deliveriesPath("r1", q)
			for b.Loop() {
				if r := a.getAs(key, path); r.Status != http.StatusOK {
					b.Fatalf("status %d", r.Status)
				}
			}
		})
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
