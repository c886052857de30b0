package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// An identical request that commits between ingest's replay check and its
// write (the window a race leaves open) makes the write fail whole: the
// stream's position is not consumed, nothing is half-written, and the
// request is answered as the replay, or the conflict, it is. Each way
// ingest writes is covered: the one-round-trip pipeline (plain records),
// the transaction that normalises a file-carrying record's asset, and the
// statements Citus runs.
func TestIngestOfATakenMutationID(t *testing.T) {
	for _, path := range []struct {
		name               string
		files, distributed bool
	}{{"pipeline", false, false}, {"transaction with files", true, false}, {"citus statements", false, true}} {
		t.Run(path.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			if path.distributed {
				st.UseDistributedIngest()
			}
			_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
			require.NoError(t, err)
			mutation := func(id, name string) store.Mutation {
				data := fmt.Sprintf(`{"name":%q}`, name)
				d := sha256.Sum256([]byte(data))
				return store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: "a"},
					MutationID: id, Data: []byte(data), CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:], CarriesFiles: path.files}
			}
			position := func() (last int64, changes int) {
				require.NoError(t, st.Pool().QueryRow(ctx, `SELECT (SELECT last_sequence FROM collection_streams),
				                                                   (SELECT count(*) FROM record_changes)`).Scan(&last, &changes))
				return last, changes
			}

			env, how, err := st.RecordIngest(ctx, mutation("m1", "first"), 10)
			require.NoError(t, err)
			require.Equal(t, store.Applied, how)
			require.EqualValues(t, 1, env.Sequence)

			env, how, err = store.IngestNew(st, ctx, mutation("m1", "first"), 20)
			require.NoError(t, err)
			require.Equal(t, store.Replayed, how, "the same request, taken meanwhile, is its replay")
			require.EqualValues(t, 1, env.Sequence)
			require.EqualValues(t, 10, env.ReceivedAt, "the replay answers the original")

			_, _, err = store.IngestNew(st, ctx, mutation("m1", "other"), 20)
			require.True(t, apperr.Is(err, apperr.Conflict), "%v", err)

			last, changes := position()
			require.EqualValues(t, 1, last, "a write that lost the race gives its position back")
			require.Equal(t, 1, changes)
			env, how, err = st.RecordIngest(ctx, mutation("m2", "second"), 30)
			require.NoError(t, err)
			require.Equal(t, store.Applied, how)
			require.EqualValues(t, 2, env.Sequence, "positions stay gapless")
		})
	}
}

// Ingest into a restaurant the service does not know is a 404 on every
// path, with nothing written.
func TestIngestIntoAnUnknownRestaurant(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for _, files := range []bool{false, true} {
		d := sha256.Sum256([]byte("x"))
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "nowhere", Collection: "areas", RecordID: "a"},
			MutationID: "m1", Data: []byte(`{}`), CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:], CarriesFiles: files}, 1)
		require.True(t, apperr.Is(err, apperr.NotFound), "files=%v: %v", files, err)
	}
	var n int
	require.NoError(t, st.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM collection_streams) + (SELECT count(*) FROM record_changes)`).Scan(&n))
	require.Zero(t, n)
}

// openStore is a store on a fresh migrated database, closed when t ends.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), testdb.URL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}
