package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// failureStore is a database with restaurant r1 and a store on it, for
// RecordIngestMany's failures.
func failureStore(t *testing.T, dbURL string) *store.Store {
	t.Helper()
	execSQL(t, dbURL, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', to_timestamp(1000))`)
	st, _ := recordingStore(t, dbURL)
	return st
}

// areaMutation is a new area of r1.
func areaMutation(record, mutation string) store.Mutation {
	d := sha256.Sum256([]byte(record + mutation))
	return store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: record},
		MutationID: mutation, Data: []byte(`{"name":"x","isDeleted":false}`), CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}
}

// raiseFor makes PostgreSQL raise for the record id given, from a trigger
// on record_changes: at the statement, or, deferred, at the commit.
// body is the trigger's action.
func raiseFor(t *testing.T, dbURL, record string, deferred bool, body string) {
	t.Helper()
	execSQL(t, dbURL, fmt.Sprintf(`CREATE FUNCTION test_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.record_id = '%s' THEN %s; END IF; RETURN NULL; END $$`, record, body))
	when := ""
	if deferred {
		when = "DEFERRABLE INITIALLY DEFERRED"
	}
	execSQL(t, dbURL, `CREATE CONSTRAINT TRIGGER test_raise AFTER INSERT ON record_changes `+when+` FOR EACH ROW EXECUTE FUNCTION test_raise()`)
}

// statusOf is the status an outcome's single PUT would answer.
func statusOf(o store.IngestOutcome) int {
	if o.Err == nil {
		return http.StatusOK
	}
	if e, ok := apperr.As(o.Err); ok {
		return apperr.KindOf(e.Code).Status
	}
	return http.StatusInternalServerError
}

// stored is the mutation ids r1's changes carry, with their positions.
func stored(t *testing.T, st *store.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range queryStrings(t, st, `SELECT mutation_id || ' ' || sequence FROM record_changes WHERE restaurant_id = 'r1'`) {
		m, seq, _ := strings.Cut(s, " ")
		out[m] = seq
	}
	return out
}

// A pair whose commit fails (a deferred constraint raising at its Sync)
// rolled back alone: that item is answered with the error, the items
// before and after it are applied, at positions 1 and 2 (the failed one
// took none), and what each is answered is what is stored. On the code
// that read a failed Sync as the next pair's, the failed item was answered
// applied, though nothing of it was stored, and the next was blamed.
func TestIngestManyCommitFailureIsItsItemsOwn(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	raiseFor(t, dbURL, "boom", true, `RAISE EXCEPTION 'refused at commit'`)
	st := failureStore(t, dbURL)
	ctx := context.Background()
	res := st.RecordIngestMany(ctx, []store.Mutation{areaMutation("a", "m1"), areaMutation("boom", "m2"), areaMutation("c", "m3")}, []int64{10, 11, 12})

	require.NoError(t, res[0].Err)
	require.Error(t, res[1].Err, "the item whose commit failed")
	require.False(t, apperr.Is(res[1].Err, apperr.DependencyUnavailable), "a refusal of the database, not its loss: %v", res[1].Err)
	require.NoError(t, res[2].Err)
	require.Equal(t, "1 2", fmt.Sprint(res[0].Envelope.Sequence, res[2].Envelope.Sequence))
	require.Equal(t, map[string]string{"m1": "1", "m3": "2"}, stored(t, st), "gapless: the failed item took no position")
	require.Equal(t, []string{"areas 2"}, queryStrings(t, st, `SELECT collection || ' ' || last_sequence FROM collection_streams`))

	// The single PUT of that record fails alike.
	_, _, err := st.RecordIngest(ctx, areaMutation("boom", "m9"), 20)
	require.Error(t, err)
	require.Equal(t, statusOf(res[1]), statusOf(store.IngestOutcome{Err: err}))
}

// The server ends the session mid-pipeline (pg_terminate_backend, as an
// administrator or a failover does), at a statement or at a commit: every
// item's answer agrees with what is stored. Applied means stored; a
// refusal (4xx) means not stored; only a failure of the service (5xx),
// whose outcome is unknown as for a single PUT cut there, may be either.
// The items before it are applied, and positions stay gapless.
func TestIngestManyServerGoneMidPipeline(t *testing.T) {
	t.Parallel()
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("at commit %v", deferred), func(t *testing.T) {
			t.Parallel()
			dbURL := testdb.URL(t)
			raiseFor(t, dbURL, "kill", deferred, `PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5)`)
			st := failureStore(t, dbURL)
			ms := []store.Mutation{areaMutation("a", "m1"), areaMutation("b", "m2"), areaMutation("kill", "m3"),
				areaMutation("c", "m4"), areaMutation("d", "m5")}
			res := st.RecordIngestMany(context.Background(), ms, []int64{10, 11, 12, 13, 14})
			got := stored(t, st)
			for i, o := range res {
				_, in := got[ms[i].MutationID]
				switch s := statusOf(o); {
				case s == http.StatusOK:
					require.True(t, in, "item %d answered applied, not stored", i)
				case s < 500:
					require.False(t, in, "item %d answered %d (%v), yet stored", i, s, o.Err)
				}
			}
			require.Equal(t, 200, statusOf(res[0]))
			require.Equal(t, 200, statusOf(res[1]))
			require.Equal(t, http.StatusServiceUnavailable, statusOf(res[2]), "the connection lost: %v", res[2].Err)
			require.NotContains(t, got, "m3", "the transaction the server ended rolled back")
			seqs := queryStrings(t, st, `SELECT sequence::text FROM record_changes ORDER BY sequence`)
			for i, s := range seqs {
				require.Equal(t, fmt.Sprint(i+1), s, "gapless")
			}
		})
	}
}

// After a failure of the service, RecordIngestMany starts no more work:
// a mutation that would go after the pipeline (a file-carrying record, in
// its own transaction) is not tried, while one sent in the same pipeline
// as the failed one keeps the outcome the database gave it. On the code
// before, the file-carrying record was applied after the failure.
func TestIngestManyStopsAtAFailure(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	raiseFor(t, dbURL, "boom", false, `RAISE EXCEPTION 'refused'`)
	st := failureStore(t, dbURL)
	files := areaMutation("f", "m4")
	files.CarriesFiles = true
	res := st.RecordIngestMany(context.Background(),
		[]store.Mutation{areaMutation("a", "m1"), areaMutation("boom", "m2"), areaMutation("c", "m3"), files, areaMutation("e", "m5")},
		[]int64{10, 11, 12, 13, 14})
	require.NoError(t, res[0].Err)
	require.True(t, apperr.Failed(res[1].Err), "%v", res[1].Err)
	require.NoError(t, res[2].Err, "sent with the failed one: applied")
	require.ErrorIs(t, res[3].Err, store.ErrNotTried)
	require.ErrorIs(t, res[4].Err, store.ErrNotTried)
	require.Equal(t, map[string]string{"m1": "1", "m3": "2"}, stored(t, st))
}

// A migration that changes the type of a column the pipeline's statements
// return makes PostgreSQL refuse them as prepared before ("cached plan
// must not change result type"): the batch that meets it is answered 503,
// and the next one on the same connection succeeds. On the code before,
// the statements stayed prepared and every later batch on the connection
// answered 503 until the pool recycled it.
func TestIngestManyAfterAStalePlan(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	execSQL(t, dbURL, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', to_timestamp(1000))`)
	one := dbURL + "&pool_max_conns=1"
	if !strings.Contains(dbURL, "?") {
		one = dbURL + "?pool_max_conns=1"
	}
	st, _ := recordingStore(t, one)
	require.Equal(t, 1, st.PoolSize(), "one connection: every batch runs where the statements were prepared")
	ctx := context.Background()
	res := st.RecordIngestMany(ctx, []store.Mutation{areaMutation("a", "m1")}, []int64{10})
	require.NoError(t, res[0].Err)

	execSQL(t, dbURL, `ALTER TABLE record_changes ALTER COLUMN source_version TYPE varchar(200)`)
	// Each statement prepared before the migration that returns the column
	// is refused once, then prepared again: the replay check (pgx's
	// statement cache), then the pipeline's. A third try succeeds.
	ms := []store.Mutation{areaMutation("b", "m2"), areaMutation("c", "m3")}
	for try := 1; ; try++ {
		res = st.RecordIngestMany(ctx, ms, []int64{11, 12})
		if res[0].Err == nil {
			require.NoError(t, res[1].Err)
			require.Equal(t, 3, try, "the tries it took")
			break
		}
		require.True(t, apperr.Is(res[0].Err, apperr.DependencyUnavailable), "try %d: %v", try, res[0].Err)
		require.True(t, apperr.Is(res[1].Err, apperr.DependencyUnavailable), "try %d: %v", try, res[1].Err)
		require.Less(t, try, 3, "still refused: %v", res[0].Err)
	}
	require.Equal(t, map[string]string{"m1": "1", "m2": "2", "m3": "3"}, stored(t, st))
}

// A batch whose store fails on an item answers that failure (a 500 here),
// and counts as applied the items the database applied with it in the
// same pipeline: the metric agrees with what is stored. Resent, the batch
// replays those and applies the rest. On the code before, the items after
// the failure were applied but never counted.
func TestBatchCountsItemsAppliedAfterAFailure(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := context.Background()
	enabled := time.UnixMilli(1_650_000_000_000)
	_, err := a.store().RestaurantAdd(ctx, "r1", store.RestaurantChange{EnabledAt: &enabled})
	require.NoError(t, err)
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	execSQL(t, a.cfg.DatabaseURL, `CREATE FUNCTION test_raise() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.record_id = 't-2' AND NOT EXISTS (SELECT FROM test_allow) THEN RAISE EXCEPTION 'refused'; END IF; RETURN NULL; END $$`)
	execSQL(t, a.cfg.DatabaseURL, `CREATE TABLE test_allow ()`)
	execSQL(t, a.cfg.DatabaseURL, `CREATE TRIGGER test_raise AFTER INSERT ON record_changes FOR EACH ROW EXECUTE FUNCTION test_raise()`)
	items := []any{
		snapshotItem("temperature-readings", reading("r1", "t-1", "m-1", 2)),
		snapshotItem("temperature-readings", reading("r1", "t-2", "m-2", 3)),
		snapshotItem("temperature-readings", reading("r1", "t-3", "m-3", 4)),
	}
	r := a.postBatch(key, "r1", map[string]any{"items": items})
	requireProblem(t, r, http.StatusInternalServerError, "internal-error")
	st, _ := recordingStore(t, a.cfg.DatabaseURL)
	require.Equal(t, []string{"t-1", "t-3"}, queryStrings(t, st, `SELECT record_id FROM record_changes ORDER BY sequence`))
	applied := func() float64 {
		return a.scrape().value("foodsafe_ingest_writes_total", "outcome", "applied")
	}
	require.Equal(t, 2.0, applied(), "t-1 and t-3, applied")

	execSQL(t, a.cfg.DatabaseURL, `INSERT INTO test_allow DEFAULT VALUES`)
	res := a.batch(key, "r1", items)
	require.Equal(t, []bool{true, false, true}, []bool{*res[0].Replayed, *res[1].Replayed, *res[2].Replayed})
	require.Equal(t, 3.0, applied())
}
