package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// walkIndexes are the only ways a walk statement may read a table (the
// stream's row, by its primary key, for its largest record).
var walkIndexes = []string{"records_walk_idx", "record_changes_lifetime_idx", "collection_streams_pkey"}

// requireWalkIndexesOnly asserts that every node reading a table is an
// index scan of one of walkIndexes, that nothing sorts, and that nothing
// aggregates but the stream's row read by its primary key (at most one
// row: the head and the largest record): never a pass over the stream's
// index range.
func requireWalkIndexesOnly(t testing.TB, plan planNode, what string) []string {
	t.Helper()
	types := requireIndexOnlyPlan(t, plan, "records_walk_idx")
	plan.walk(func(n planNode) {
		if n.NodeType == "Aggregate" {
			n.walk(func(in planNode) {
				if in.Relation != "" {
					require.Equal(t, "collection_streams_pkey", in.IndexName, "%s aggregates %s: %v", what, in.Relation, types)
				}
			})
		}
		if n.Relation == "" {
			return
		}
		require.Contains(t, []string{"Index Scan", "Index Only Scan"}, n.NodeType, "%s reads %s by %s: %v", what, n.Relation, n.NodeType, types)
		require.True(t, slices.Contains(walkIndexes, n.IndexName), "%s reads %s through %s: %v", what, n.Relation, n.IndexName, types)
	})
	return types
}

// A changes walk is the walk statement with after = the previous pin: its
// first page, its later pages and its empty answer (and a full walk's
// first page, the same statement with after = 0) read only
// records_walk_idx, record_changes_lifetime_idx and the stream's row by
// collection_streams_pkey, never sort and
// never scan a table, in one round trip each, whether the tables were
// ANALYZEd or never were, as custom and as generic plans.
func TestChangesWalkPlans(t *testing.T) {
	t.Parallel()
	for _, analyzed := range []bool{true, false} {
		t.Run(fmt.Sprintf("analyzed=%v", analyzed), func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.URL(t)
			// A stream with heavy history (10% of its records updated 10
			// times), beside other streams.
			seedHistoryNoStatsSQL(t, dbURL, 20_000, 10)
			for r := 2; r <= 4; r++ {
				seedRecordsNoStatsSQL(t, dbURL, fmt.Sprintf("r%d", r), "areas", 20_000)
			}
			st, rec := recordingStore(t, dbURL)
			ctx := context.Background()
			if !analyzed {
				var reltuples float64
				require.NoError(t, st.Pool().QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE relname = 'records'`).Scan(&reltuples))
				require.Equal(t, float64(-1), reltuples, "records has never been analyzed")
			}
			rec.take()

			full, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 50})
			require.NoError(t, err)
			since := full.Pinned
			fullWalk := rec.take()
			ingest := func(prefix string, from, to int, deleted bool) {
				for i := from; i <= to; i++ {
					m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: fmt.Sprintf("rec-%d", i*37)},
						MutationID: fmt.Sprintf("%s-%d", prefix, i), Deleted: deleted, CapturedAt: 1, PayloadVersion: 1}
					if !deleted {
						m.Data = []byte(fmt.Sprintf(`{"name":"%s-%d","isDeleted":false}`, prefix, i))
					}
					digest := sha256.Sum256(append([]byte(m.MutationID), m.Data...))
					m.RequestSHA256 = digest[:]
					_, _, err := st.RecordIngest(ctx, m, 1)
					require.NoError(t, err)
				}
			}
			ingest("upd", 1, 250, false)
			ingest("del", 251, 300, true)
			if analyzed {
				analyze(t, dbURL)
			}

			rec.take()
			first, err := st.RecordChanges(ctx, store.RecordChangesParams{RestaurantID: "r1", Collection: "areas", Limit: 50, Since: since})
			require.NoError(t, err)
			require.Len(t, first.Records, 50)
			require.NotNil(t, first.Next)
			firstPage := rec.take()
			// Written during the changes walk: its later pages read these
			// records' versions as of its pin.
			ingest("late", 1, 100, false)
			rec.take()
			later, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 50, Pos: first.Next})
			require.NoError(t, err)
			require.Len(t, later.Records, 50)
			laterPage := rec.take()
			var head int64
			require.NoError(t, st.Pool().QueryRow(ctx, `SELECT last_sequence FROM collection_streams WHERE restaurant_id = 'r1' AND collection = 'areas'`).Scan(&head))
			rec.take()
			none, err := st.RecordChanges(ctx, store.RecordChangesParams{RestaurantID: "r1", Collection: "areas", Limit: 50, Since: head})
			require.NoError(t, err)
			require.Empty(t, none.Records)
			nothingChanged := rec.take()
			for _, q := range [][]sentQuery{fullWalk, firstPage, laterPage, nothingChanged} {
				require.Len(t, q, 1, "one round trip per page")
			}

			for name, q := range map[string]sentQuery{"full walk's first": fullWalk[0], "first": firstPage[0], "later": laterPage[0],
				"nothing changed": nothingChanged[0]} {
				for _, generic := range []bool{false, true} {
					what := fmt.Sprintf("%s page, generic=%v", name, generic)
					types := requireWalkIndexesOnly(t, explain(t, dbURL, q, generic), what)
					t.Logf("%s: %v", what, types)
				}
			}
		})
	}
}
