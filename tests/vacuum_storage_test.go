package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// The storage parameters of migration 00023 are on the tables, and do what
// they are for: a plain VACUUM (autovacuum's kind, index cleanup AUTO)
// leaves records_walk_idx without entries of dead rows even when few pages
// hold dead items, where the default leaves them all (the same updates
// vacuumed with the parameter reset); and ingest's updates of the stream
// row are heap-only (HOT), so they add no index entries.
func TestVacuumAndHotStreamStorage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)

	options := func(table string) []string {
		var opts []string
		require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass`, table).Scan(&opts))
		return opts
	}
	require.ElementsMatch(t, []string{"vacuum_index_cleanup=on"}, options("records"))
	require.ElementsMatch(t, []string{"vacuum_index_cleanup=on", "fillfactor=70"}, options("collection_streams"))
	// No index of collection_streams keys a column every write changes.
	var keyed []string
	rows, err := conn.Query(ctx, `SELECT DISTINCT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 'collection_streams'::regclass ORDER BY 1`)
	require.NoError(t, err)
	keyed, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"changed_epoch", "collection", "restaurant_id"}, keyed)

	const n = 20_000
	seedRecordsNoStatsSQL(t, dbURL, "r1", "areas", n)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	_, err = conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgstattuple`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `VACUUM records`)
	require.NoError(t, err)

	// entries counts records_walk_idx's entries (those of dead rows too,
	// unless a scan marked them dead) against the table's live rows.
	entries := func() (index, live int64) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, `SELECT tuple_count + dead_tuple_count FROM pgstattuple('records_walk_idx')`).Scan(&index))
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM records`).Scan(&live))
		return index, live
	}
	index, live := entries()
	require.Equal(t, live, index, "after the first VACUUM")

	round := 0
	// update rewrites 3 neighbouring records 30 times: dead items on a
	// few pages, far below the 2% of the table's pages under which a
	// plain VACUUM skips index cleanup.
	update := func() {
		t.Helper()
		round++
		for i := range 90 {
			body := []byte(fmt.Sprintf(`{"name":"r%d-%d","isDeleted":false}`, round, i))
			d := sha256.Sum256(body)
			_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas",
				RecordID: fmt.Sprintf("rec-%07d", n/2+i%3)}, MutationID: fmt.Sprintf("r%d-%d", round, i), Data: body,
				CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
			require.NoError(t, err)
		}
	}

	update()
	index, live = entries()
	require.Equal(t, live+90, index, "each update leaves its old walk index entry")
	_, err = conn.Exec(ctx, `VACUUM records`)
	require.NoError(t, err)
	index, live = entries()
	require.Equal(t, live, index, "a plain VACUUM removed the dead entries")

	// The same with the default storage parameter: the dead entries stay.
	_, err = conn.Exec(ctx, `ALTER TABLE records RESET (vacuum_index_cleanup)`)
	require.NoError(t, err)
	update()
	_, err = conn.Exec(ctx, `VACUUM records`)
	require.NoError(t, err)
	index, live = entries()
	require.Equal(t, live+90, index, "with index cleanup AUTO a plain VACUUM bypasses the index")

	// The stream row's updates are HOT. Statistics reach pg_stat_user_tables
	// when the writing connections end.
	updated := func() (upd, hot int64) {
		_, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
		require.NoError(t, err)
		require.NoError(t, conn.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE relid = 'collection_streams'::regclass`).Scan(&upd, &hot))
		return upd, hot
	}
	upd0, hot0 := updated()
	writer, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	st = writer
	update()
	writer.Close()
	require.Eventually(t, func() bool {
		upd, _ := updated()
		return upd >= upd0+90
	}, 30*time.Second, 100*time.Millisecond, "the writers' statistics")
	upd, hot := updated()
	t.Logf("collection_streams: %d updates, %d of them HOT", upd-upd0, hot-hot0)
	// At most one update per 1,024 transactions changes the epoch.
	require.GreaterOrEqual(t, hot-hot0, (upd-upd0)*9/10, "updates of the stream row are HOT")
}
