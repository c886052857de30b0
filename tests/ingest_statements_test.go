package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// Ingest applies a change with one statement on plain PostgreSQL (after
// StreamNextSequence, in one pipeline outside a transaction) and with three
// pipelined single-shard statements on Citus (in a transaction). Both leave the same history and the
// same current state for the same mutations: creates, updates, replays,
// a conflicting reuse, a tombstone, and an identical
// mutation raced from eight writers.
func TestIngestStatementsAgree(t *testing.T) {
	t.Parallel()
	type outcome struct {
		History []string
		Current []string
	}
	run := func(t *testing.T, distributed bool) outcome {
		dbURL := testdb.URL(t)
		execSQL(t, dbURL, `INSERT INTO restaurants (id) VALUES ('r1')`)
		st, _ := recordingStore(t, dbURL)
		if distributed {
			st.UseDistributedIngest()
		}
		ctx := context.Background()
		ingest := func(record, mutation, body string, deleted bool) (string, bool, error) {
			m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: record},
				MutationID: mutation, Deleted: deleted, CapturedAt: 1, PayloadVersion: 1}
			if !deleted {
				m.Data = []byte(body)
			}
			d := sha256.Sum256([]byte(record + body))
			m.RequestSHA256 = d[:]
			e, replayed, err := st.RecordIngest(ctx, m, 1)
			return fmt.Sprint(int64(e.Sequence)), replayed == store.Replayed, err
		}
		seq, replayed, err := ingest("a", "m1", `{"name":"a1","isDeleted":false}`, false)
		require.NoError(t, err)
		require.Equal(t, "1", seq)
		require.False(t, replayed)
		seq, _, err = ingest("a", "m2", `{"name":"a2","isDeleted":false}`, false)
		require.NoError(t, err)
		require.Equal(t, "2", seq)
		seq, replayed, err = ingest("a", "m2", `{"name":"a2","isDeleted":false}`, false)
		require.NoError(t, err)
		require.Equal(t, "2", seq, "a replay answers the original")
		require.True(t, replayed)
		_, _, err = ingest("a", "m2", `{"name":"other","isDeleted":false}`, false)
		require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)
		_, _, err = ingest("b", "m3", `{"name":"b1","isDeleted":false}`, false)
		require.NoError(t, err)
		_, _, err = ingest("b", "m4", "", true)
		require.NoError(t, err)

		// A statement that fails reports its own error, not the aborted
		// transaction of the statements pipelined after it.
		d := sha256.Sum256([]byte("bad"))
		_, _, err = st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: "bad"},
			MutationID: "m-bad", Deleted: true, Data: []byte(`{"name":"x"}`), CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
		require.ErrorContains(t, err, "record_changes_tombstone_has_no_data")

		var wg sync.WaitGroup
		errs := make([]error, 8)
		replays := make([]bool, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, replays[i], errs[i] = ingest("c", "m5", `{"name":"c1","isDeleted":false}`, false)
			}()
		}
		wg.Wait()
		applied := 0
		for i, err := range errs {
			require.NoError(t, err)
			if !replays[i] {
				applied++
			}
		}
		require.Equal(t, 1, applied, "raced identical mutations apply once")

		var out outcome
		rows, err := st.Pool().Query(ctx, `SELECT record_id, mutation_id, sequence, deleted, coalesce(data::text, ''),
		                                          coalesce(superseded_by::text, '') FROM record_changes ORDER BY sequence`)
		require.NoError(t, err)
		for rows.Next() {
			var rec, mut, data, sup string
			var seq int64
			var del bool
			require.NoError(t, rows.Scan(&rec, &mut, &seq, &del, &data, &sup))
			out.History = append(out.History, fmt.Sprintf("%s %s %d %v %s superseded by %q", rec, mut, seq, del, data, sup))
		}
		require.NoError(t, rows.Err())
		rows, err = st.Pool().Query(ctx, `SELECT record_id, mutation_id, sequence, deleted, coalesce(data::text, '') FROM records ORDER BY record_id`)
		require.NoError(t, err)
		for rows.Next() {
			var rec, mut, data string
			var seq int64
			var del bool
			require.NoError(t, rows.Scan(&rec, &mut, &seq, &del, &data))
			out.Current = append(out.Current, fmt.Sprintf("%s %s %d %v %s", rec, mut, seq, del, data))
		}
		require.NoError(t, rows.Err())
		return out
	}
	single := run(t, false)
	pipelined := run(t, true)
	require.Equal(t, single, pipelined)
	require.Equal(t, []string{
		`a m2 2 false {"name":"a2","isDeleted":false}`,
		`b m4 4 true `,
		`c m5 5 false {"name":"c1","isDeleted":false}`,
	}, single.Current)
	require.Contains(t, single.History, `a m1 1 false {"name":"a1","isDeleted":false} superseded by "2"`)
	require.Contains(t, single.History, `b m3 3 false {"name":"b1","isDeleted":false} superseded by "4"`)
}

// BenchmarkIngestStatements compares the two ways ingest writes a change
// on plain PostgreSQL, at store level on one stream: what plain PostgreSQL
// runs (StreamNextSequence and the single statement as one pipeline, one
// implicit transaction), and what Citus needs (StreamNextSequence, then the
// three single-shard statements as one pipeline, in a transaction). docs/dbas.md
// ("Citus") and docs/performance.md quote it.
func BenchmarkIngestStatements(b *testing.B) {
	for _, path := range []string{"single-statement", "pipelined"} {
		b.Run(path, func(b *testing.B) {
			dbURL := testdb.URL(b)
			ctx := context.Background()
			st, err := store.Open(ctx, dbURL)
			require.NoError(b, err)
			defer st.Close()
			_, err = st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
			require.NoError(b, err)
			if path == "pipelined" {
				st.UseDistributedIngest()
			}
			b.ResetTimer()
			for i := range b.N {
				body := []byte(fmt.Sprintf(`{"name":"v-%d","isDeleted":false}`, i))
				d := sha256.Sum256(body)
				_, _, err := st.RecordIngest(ctx, store.Mutation{
					RecordKey:  store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: fmt.Sprintf("rec-%d", i%100)},
					MutationID: fmt.Sprintf("m-%d", i), Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
