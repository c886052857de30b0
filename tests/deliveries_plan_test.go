package tests

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// seedDeliveriesSQL spreads n deliveries over restaurants r1..rK, three
// per minute (ties), straight in SQL, then refreshes statistics.
func seedDeliveriesSQL(t testing.TB, dbURL string, n, restaurants int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT 'r' || g FROM generate_series(1, $1::int) g ON CONFLICT DO NOTHING`, restaurants)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
		INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
		                        temperature_records, non_compliance_reasons, corrective_actions, commentary,
		                        image_count, content_sha256, received_sequence)
		SELECT 'r' || (g % $2::int + 1), 'd' || lpad(g::text, 8, '0'), 1700000000000 + (g / 3) * 60000, g % 7 = 0,
		       's1', 'Supplier', '[{"product":"x","lotNumber":"l","unit":"°C","value":3}]', '{}', '{}', NULL,
		       0, sha256(g::text::bytea), g
		FROM generate_series(1, $1::int) g`, n, restaurants)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `ANALYZE deliveries`)
	require.NoError(t, err)
}

// Both list queries read deliveries_list_idx in order: no Sort node, no
// sequential scan, for the plan of these arguments and for the generic
// plan of the prepared statement.
func TestDeliveryListPlans(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	seedDeliveriesSQL(t, dbURL, 40000, 20)
	st, rec := recordingStore(t, dbURL)
	ctx := context.Background()

	page, more, err := st.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: "r3", To: 1 << 62, Limit: 50})
	require.NoError(t, err)
	require.True(t, more)
	first := rec.take()
	last := page[len(page)-1]
	_, _, err = st.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: "r3", To: 1 << 62, Limit: 50, After: &store.DeliveryPos{OccurredAt: int64(last.OccurredAt), ID: last.ID}})
	require.NoError(t, err)
	after := rec.take()
	require.Len(t, first, 1, "one round trip per page")
	require.Len(t, after, 1, "one round trip per page")

	for _, q := range []sentQuery{first[0], after[0]} {
		for _, generic := range []bool{false, true} {
			types := requireIndexOnlyPlan(t, explain(t, dbURL, q, generic), "deliveries_list_idx")
			t.Logf("generic=%v plan: %v", generic, types)
		}
	}
}
