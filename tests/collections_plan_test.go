package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A walk page reads records_walk_idx as one range scan (and a later page
// the versions as of the pin of the records changed since that fall in
// it, one rectangle of record_changes_lifetime_idx):
// no Sort node and no sequential scan, for first and later pages, custom
// and generic plans.
func TestWalkPlans(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	// A stream with heavy history (10% of records updated 10 times: half
	// the change log is superseded versions), beside other streams.
	seedHistorySQL(t, dbURL, 20_000, 10)
	for r := 2; r <= 4; r++ {
		seedRecordsSQL(t, dbURL, fmt.Sprintf("r%d", r), "areas", 20_000)
	}
	st, rec := recordingStore(t, dbURL)
	ctx := context.Background()
	// More history: records updated after the first page pinned the walk.
	first, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 50})
	require.NoError(t, err)
	firstPage := rec.take()
	for i := 1; i <= 300; i++ {
		body := []byte(fmt.Sprintf(`{"name":"v2-%d","isDeleted":false}`, i))
		digest := sha256.Sum256(body)
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas",
			RecordID: fmt.Sprintf("rec-%d", i*50)}, MutationID: fmt.Sprintf("upd-%d", i), Data: body,
			CapturedAt: 1, PayloadVersion: 1, RequestSHA256: digest[:]}, 1)
		require.NoError(t, err)
	}
	_, err = st.Pool().Exec(ctx, "ANALYZE records; ANALYZE record_changes")
	require.NoError(t, err)
	rec.take()
	page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 50, Pos: first.Next})
	require.NoError(t, err)
	require.Len(t, page.Records, 50)
	laterPage := rec.take()
	require.Len(t, firstPage, 1, "one round trip per page")
	require.Len(t, laterPage, 1, "one round trip per page")

	var superseded float64
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT count(*) FROM record_changes WHERE superseded_by IS NOT NULL`).Scan(&superseded))

	for name, q := range map[string]sentQuery{"first": firstPage[0], "later": laterPage[0]} {
		for _, generic := range []bool{false, true} {
			plan := explain(t, dbURL, q, generic)
			types := requireIndexOnlyPlan(t, plan, "records_walk_idx")
			usesHistory := false
			plan.walk(func(n planNode) {
				if n.IndexName == "record_changes_lifetime_idx" {
					usesHistory = true
					// The planner must expect few versions in the page's
					// rectangle; if it expects a large share of the history
					// it plans a sequential scan once the table is big.
					require.LessOrEqual(t, n.PlanRows, superseded/100,
						"%s page, generic=%v: history branch estimated at %v rows of %v superseded versions", name, generic, n.PlanRows, superseded)
				}
			})
			// A first page is pinned at the head it reads: nothing was
			// superseded after it, and its statement has no history branch.
			require.Equal(t, name == "later", usesHistory, "%s page, generic=%v: %v", name, generic, types)
			t.Logf("%s page, generic=%v: %v", name, generic, types)
		}
	}
}
