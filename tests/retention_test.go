package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/maintain"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// testClock is a settable clock shared by an app and its maintenance
// runner.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// maintenance is a runner on the app's store and clock with the default
// settings (25 h compaction window, 400 days of audit).
func (a *app) maintenance(clock func() time.Time, set maintain.Settings) *maintain.Runner {
	if set.CompactAfter == 0 {
		set.CompactAfter = time.Duration(a.cfg.CompactAfter)
	}
	return maintain.New(a.store(), a.svc.Blobs, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, set, 0, clock)
}

// changeRow reads a record_changes row's compaction state.
func (a *app) changeRow(restaurant, mutation string) (hasData, compacted bool) {
	a.t.Helper()
	err := a.store().Pool().QueryRow(context.Background(),
		`SELECT data IS NOT NULL, compacted_at IS NOT NULL FROM record_changes WHERE restaurant_id = $1 AND mutation_id = $2`,
		restaurant, mutation).Scan(&hasData, &compacted)
	require.NoError(a.t, err)
	return hasData, compacted
}

// compactionApp is an app on a settable clock (at t0) with restaurant r1
// and a key that writes and reads its areas.
func compactionApp(t *testing.T, t0 time.Time) (*app, *testClock, string) {
	t.Helper()
	clock := &testClock{now: t0}
	a := newApp(t, withClock(clock.Now))
	a.addRestaurants("r1")
	return a, clock, a.newKey(grant("r1", "areas:write", "areas:read"))
}

// A walk started before a compaction and continued after it returns
// exactly what it returned without the compaction; the versions it could
// never read lose their data, and their mutation ids still answer as
// replays, never as new changes.
func TestCompactionKeepsWalksAndReplays(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_800_000_000_000)
	a, clock, key := compactionApp(t, t0)
	ingest := func(id, mutation string, deleted bool, data any) response {
		return a.ingest(key, "r1", "areas", id, mutation, snapshot("r1", id, mutation, 1_700_000_000_000, deleted, data))
	}
	ok := func(r response) {
		t.Helper()
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	// t0: a, c and b; a updated (a1 superseded at t0); c deleted, then
	// re-created (the tombstone c2 superseded at t0).
	// b is last in the walk's order, so its version as of the pin is read
	// from the history after the compaction.
	ok(ingest("a", "a1", false, area("a v1")))
	ok(ingest("c", "c1", false, area("c v1")))
	ok(ingest("a", "a2", false, area("a v2")))
	ok(ingest("c", "c2", true, nil))
	ok(ingest("c", "c3", false, area("c v3")))
	ok(ingest("b", "b1", false, area("b v1")))

	// t0+2h: a walk pins the stream; then b changes (b1 superseded at
	// t0+2h, after the pin: the walk must still return b as b1).
	clock.Set(t0.Add(2 * time.Hour))
	first := a.walkStep(key, "r1", "areas", 1, "")
	require.NotNil(t, first.NextCursor)
	ok(ingest("b", "b2", false, area("b v2")))
	before, _ := a.walkFrom(key, "r1", "areas", 1, *first.NextCursor)

	// t0+25h30m: the window (25 h) has passed for a1 and c2, not for b1;
	// the walk's cursors are valid until t0+26h.
	clock.Set(t0.Add(25*time.Hour + 30*time.Minute))
	require.NoError(t, a.maintenance(clock.Now, maintain.Settings{}).RunOnce(context.Background()))
	for m, want := range map[string]bool{"a1": true, "c2": true, "c1": true, "b1": false, "a2": false, "b2": false, "c3": false} {
		_, compacted := a.changeRow("r1", m)
		require.Equal(t, want, compacted, "mutation %s compacted", m)
	}
	after, _ := a.walkFrom(key, "r1", "areas", 1, *first.NextCursor)
	require.Equal(t, before, after, "a walk whose cursor is valid reads the same after compaction")
	require.Equal(t, "b v1", nameOf(t, after, "b"), "b as it stood at the pin")

	t.Run("replay of a compacted change", func(t *testing.T) {
		r := ingest("a", "a1", false, area("a v1"))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, "compacted", r.Header.Get("Idempotent-Replayed-State"))
		var body struct{ Data map[string]any }
		r.JSON(t, &body)
		require.NotContains(t, body.Data, "data", "the compacted state is not invented")
		require.Equal(t, false, body.Data["deleted"], "never looks like a tombstone")
		require.Equal(t, "a1", body.Data["mutationId"])
		require.Equal(t, "1", body.Data["sequence"], "a1 was the stream's first change")
		require.Equal(t, "a v2", nameOf(t, []envelopeDoc{a.currentState(key, "r1", "areas", "a")}, "a"), "nothing applied")
	})
	t.Run("replay of a compacted tombstone", func(t *testing.T) {
		r := ingest("c", "c2", true, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, "compacted", r.Header.Get("Idempotent-Replayed-State"))
		var body struct{ Data map[string]any }
		r.JSON(t, &body)
		require.Equal(t, true, body.Data["deleted"])
		require.Equal(t, "c v3", nameOf(t, []envelopeDoc{a.currentState(key, "r1", "areas", "c")}, "c"), "the tombstone is not applied again")
	})
	t.Run("compacted mutation id with other content", func(t *testing.T) {
		requireProblem(t, ingest("a", "a1", false, area("other")), http.StatusConflict, "conflict")
	})
	t.Run("replay of a kept change", func(t *testing.T) {
		r := ingest("b", "b1", false, area("b v1"))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Empty(t, r.Header.Get("Idempotent-Replayed-State"))
	})
	t.Run("a new change to a compacted record", func(t *testing.T) {
		r := ingest("a", "a3", false, area("a v3"))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, "a v3", nameOf(t, []envelopeDoc{a.currentState(key, "r1", "areas", "a")}, "a"))
	})
	t.Run("compaction again changes nothing more", func(t *testing.T) {
		var n int
		require.NoError(t, a.store().Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM record_changes WHERE compacted_at IS NOT NULL`).Scan(&n))
		require.NoError(t, a.maintenance(clock.Now, maintain.Settings{}).RunOnce(context.Background()))
		var m int
		require.NoError(t, a.store().Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM record_changes WHERE compacted_at IS NOT NULL`).Scan(&m))
		require.Equal(t, n, m)
	})
	t.Run("the walk ends with its first page's lifetime", func(t *testing.T) {
		// Its pages were sealed at t0+25h30m, but the walk began at t0+2h.
		clock.Set(t0.Add(26 * time.Hour))
		p := requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit=1&cursor="+url.QueryEscape(*first.NextCursor)),
			http.StatusBadRequest, "invalid-request")
		require.Contains(t, p.Detail, "expired")
	})
}

// nameOf is data.name of record id among recs.
func nameOf(t *testing.T, recs []envelopeDoc, id string) string {
	t.Helper()
	for _, r := range recs {
		if r.ID == id {
			var d struct{ Name string }
			require.NoError(t, json.Unmarshal(r.Data, &d))
			return d.Name
		}
	}
	t.Fatalf("record %s not found", id)
	return ""
}

// Versions superseded before superseded_at existed are stamped when the
// job first sees them and compacted a window later, never at once.
func TestCompactionOfVersionsFromBeforeTheMigration(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_800_000_000_000)
	a, clock, key := compactionApp(t, t0)
	a.put(key, "r1", "areas", "a", "a1", area("v1"))
	a.put(key, "r1", "areas", "a", "a2", area("v2"))
	_, err := a.store().Pool().Exec(context.Background(), `UPDATE record_changes SET superseded_at = NULL WHERE mutation_id = 'a1'`)
	require.NoError(t, err)

	clock.Set(t0.Add(100 * 24 * time.Hour))
	run := a.maintenance(clock.Now, maintain.Settings{DryRun: true})
	require.NoError(t, run.RunOnce(context.Background()))
	hasData, compacted := a.changeRow("r1", "a1")
	require.True(t, hasData, "a dry run changes nothing")
	require.False(t, compacted)

	require.NoError(t, a.maintenance(clock.Now, maintain.Settings{}).RunOnce(context.Background()))
	hasData, compacted = a.changeRow("r1", "a1")
	require.True(t, hasData, "stamped now, not compacted: its real age is unknown")
	require.False(t, compacted)
	var stamped int64
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT superseded_at FROM record_changes WHERE mutation_id = 'a1'`).Scan(&stamped))
	require.Equal(t, clock.Now().UnixMilli(), stamped)

	clock.Set(clock.Now().Add(25*time.Hour + time.Millisecond))
	require.NoError(t, a.maintenance(clock.Now, maintain.Settings{}).RunOnce(context.Background()))
	hasData, compacted = a.changeRow("r1", "a1")
	require.False(t, hasData)
	require.True(t, compacted)
}

// Compaction works in batches and across restaurants: every version past
// the window, and none other, ends compacted whatever the batch size.
func TestCompactionBatches(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_800_000_000_000)
	clock := &testClock{now: t0}
	a := newApp(t, withClock(clock.Now))
	a.addRestaurants("r1", "r2", "r3")
	key := a.newKey(grant("r1", "areas:write"), grant("r2", "areas:write"), grant("r3", "areas:write"))
	for _, r := range []string{"r1", "r2", "r3"} {
		for i := range 7 {
			a.put(key, r, "areas", "a", fmt.Sprintf("%s-m%d", r, i), area(fmt.Sprint(i)))
		}
	}
	clock.Set(t0.Add(26 * time.Hour))
	require.NoError(t, a.maintenance(clock.Now, maintain.Settings{Batch: 2}).RunOnce(context.Background()))
	var compacted, kept int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE compacted_at IS NOT NULL), count(*) FILTER (WHERE compacted_at IS NULL AND data IS NOT NULL)
		 FROM record_changes`).Scan(&compacted, &kept))
	require.Equal(t, 3*6, compacted, "six superseded versions per restaurant")
	require.Equal(t, 3, kept, "the current versions")
}

// Compaction costs its work, not the restaurants: among 1,200 restaurants
// whose every record was updated within the window (nothing due) or
// compacted long ago, a run sends a few statements in all, where visiting
// every restaurant sent two each. With work in a few of them, it visits
// those alone, compacts what is due and stamps what was never stamped,
// and leaves the rest as it was.
func TestCompactionCostsItsWork(t *testing.T) {
	t.Parallel()
	const restaurants = 1200
	t0 := time.UnixMilli(1_800_000_000_000)
	dbURL := testdb.URL(t)
	// Every restaurant: record a in two versions, the first superseded an
	// hour ago; record b in two versions, the first compacted ten days
	// ago.
	execSQL(t, dbURL, `INSERT INTO restaurants (id) SELECT 'cw' || lpad(g::text, 5, '0') FROM generate_series(1, $1::int) g`, restaurants)
	execSQL(t, dbURL, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256, superseded_by, superseded_at, compacted_at)
		SELECT r.id, 'areas', v.seq, v.record, v.record || v.seq, false,
		       CASE WHEN v.compacted IS NULL THEN '{"name":"x","isDeleted":false}'::json END,
		       1, v.received, 1, sha256(v.record::bytea), v.superseded_by, v.superseded_at, v.compacted
		FROM restaurants r,
		     (VALUES (1, 'a', $1::bigint - 7200000, 2, $1::bigint - 3600000, NULL::bigint),
		             (2, 'a', $1::bigint - 3600000, NULL, NULL, NULL),
		             (3, 'b', $1::bigint - 1000000000, 4, $1::bigint - 900000000, $1::bigint - 800000000),
		             (4, 'b', $1::bigint - 900000000, NULL, NULL, NULL)) v(seq, record, received, superseded_by, superseded_at, compacted)`,
		t0.UnixMilli())

	st, rec := recordingStore(t, dbURL)
	run := func() int {
		t.Helper()
		rec.take()
		r := maintain.New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
			maintain.Settings{CompactAfter: 25 * time.Hour}, 0, func() time.Time { return t0 })
		require.NoError(t, r.RunOnce(context.Background()))
		return len(rec.take())
	}
	idle := run()
	// The lock and its release for each of three jobs, the audit
	// partitions of nine days, compaction's two searches: 17 today.
	require.LessOrEqual(t, idle, 20, "a run with nothing to compact among %d restaurants", restaurants)

	// Work in four restaurants: a version past the window in two, a
	// version never stamped (superseded before migration 00008) in two.
	execSQL(t, dbURL, `UPDATE record_changes SET superseded_at = $1::bigint - 26 * 3600000
		WHERE restaurant_id IN ('cw00007', 'cw01199') AND mutation_id = 'a1'`, t0.UnixMilli())
	execSQL(t, dbURL, `UPDATE record_changes SET superseded_at = NULL
		WHERE restaurant_id IN ('cw00002', 'cw00500') AND mutation_id = 'a1'`)
	busy := run()
	t.Logf("statements of a run: %d with nothing to compact, %d with work in four restaurants", idle, busy)
	require.LessOrEqual(t, busy, idle+2*4, "statements follow the restaurants with work")
	rows, err := st.Pool().Query(context.Background(), `
		SELECT restaurant_id, compacted_at IS NOT NULL, superseded_at = $1::bigint
		FROM record_changes WHERE mutation_id = 'a1' AND (compacted_at IS NOT NULL OR superseded_at = $1::bigint)
		ORDER BY restaurant_id`, t0.UnixMilli())
	require.NoError(t, err)
	type state struct {
		Restaurant         string
		Compacted, Stamped bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[state])
	require.NoError(t, err)
	require.Equal(t, []state{
		{"cw00002", false, true},
		{"cw00007", true, false},
		{"cw00500", false, true},
		{"cw01199", true, false},
	}, got, "versions stamped now wait a window")
	var compacted int
	require.NoError(t, st.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM record_changes WHERE compacted_at IS NOT NULL`).Scan(&compacted))
	require.Equal(t, restaurants+2, compacted, "the versions compacted before, and the two due")
}

// Two processes never run the same job at once: while one holds a job's
// lock, the other's run skips that job (and still runs the others).
func TestMaintenanceJobsRunOnceAtATime(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_800_000_000_000)
	a, clock, key := compactionApp(t, t0)
	a.put(key, "r1", "areas", "a", "a1", area("v1"))
	a.put(key, "r1", "areas", "a", "a2", area("v2"))
	clock.Set(t0.Add(26 * time.Hour))

	// A second process: its own pool on the same database.
	other, err := store.Open(context.Background(), a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer other.Close()

	var innerRan bool
	ran, err := a.store().WithJobLock(context.Background(), maintain.JobCompaction, func(ctx context.Context) error {
		again, err := other.WithJobLock(ctx, maintain.JobCompaction, func(context.Context) error { return nil })
		require.NoError(t, err)
		innerRan = again
		// The whole runner of the other process: compaction skipped,
		// audit partitions done.
		runner := maintain.New(other, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
			maintain.Settings{CompactAfter: 25 * time.Hour}, 0, clock.Now)
		return runner.RunOnce(ctx)
	})
	require.NoError(t, err)
	require.True(t, ran)
	require.False(t, innerRan, "the lock is held by the first process")
	_, compacted := a.changeRow("r1", "a1")
	require.False(t, compacted, "the other process skipped compaction while the first held its lock")
	var partitions int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM foodsafe_audit_partition_bounds() WHERE upper_bound > $1`, clock.Now()).Scan(&partitions))
	require.GreaterOrEqual(t, partitions, 8, "it ran the audit partition job: today and a week ahead")

	// Released: the other process runs it now.
	again, err := other.WithJobLock(context.Background(), maintain.JobCompaction, func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, again)
	require.NoError(t, maintain.New(other, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		maintain.Settings{CompactAfter: 25 * time.Hour}, 0, clock.Now).RunOnce(context.Background()))
	_, compacted = a.changeRow("r1", "a1")
	require.True(t, compacted)
}

// Audit events land in day partitions, created on demand when the writer
// meets a day nobody prepared, and every event written across a day
// boundary and while the retention job drops old partitions is kept;
// `foodsafe audit`'s query reads across partitions.
func TestAuditPartitions(t *testing.T) {
	t.Parallel()
	day1 := time.Date(2030, 1, 1, 23, 59, 59, 0, time.UTC)
	clock := &testClock{now: day1}
	a := newApp(t, withClock(clock.Now))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:read"))
	call := func(n int) {
		for range n {
			require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
			// And one counted by shape (audit_counts, partitioned alike).
			require.Equal(t, http.StatusNotFound, a.get("/counted").Status)
		}
	}
	call(3) // day 1: no partition exists
	clock.Set(day1.Add(2 * time.Second))
	call(4)                                               // day 2
	require.NoError(t, a.svc.Close(context.Background())) // flushes the writer

	// Day 3, on a second server: requests go on while the job drops
	// everything older than a day (the partition of the rows from before
	// the migration, and day 1).
	b := newApp(t, withClock(clock.Now), withDatabaseURL(a.cfg.DatabaseURL))
	clock.Set(day1.Add(36 * time.Hour))
	const during = 20
	done := make(chan int)
	go func() {
		ok := 0
		for range during {
			if b.do(req{Path: "/v1/restaurants", Header: map[string]string{"Authorization": "Bearer " + key}}).Status == http.StatusOK &&
				b.get("/counted").Status == http.StatusNotFound {
				ok++
			}
		}
		done <- ok
	}()
	err := b.maintenance(clock.Now, maintain.Settings{AuditRetention: 24 * time.Hour}).RunOnce(context.Background())
	sent := <-done
	require.NoError(t, err)
	require.Equal(t, during, sent)
	require.NoError(t, b.svc.Close(context.Background()))

	st, err := store.Open(context.Background(), a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer st.Close()
	count := func(query string, args ...any) int {
		var n int
		require.NoError(t, st.Pool().QueryRow(context.Background(), query, args...).Scan(&n))
		return n
	}
	require.Zero(t, count(`SELECT count(*) FROM foodsafe_audit_partition_bounds() WHERE upper_bound <= '2030-01-02 00:00:00+00'`),
		"day 1 and everything before it dropped")
	require.Equal(t, 4, count(`SELECT count(*) FROM audit_events_p20300102 WHERE route = '/v1/restaurants'`))
	require.Equal(t, during, count(`SELECT count(*) FROM audit_events_p20300103 WHERE route = '/v1/restaurants'`),
		"every event written while partitions were dropped")
	require.Equal(t, 4, count(`SELECT sum(requests)::int FROM audit_counts_p20300102 WHERE route = '(unmatched)'`))
	require.Equal(t, during, count(`SELECT sum(requests)::int FROM audit_counts_p20300103 WHERE route = '(unmatched)'`),
		"every request counted while partitions were dropped")
	require.Zero(t, count(`SELECT count(*) FROM pg_class WHERE relname = 'audit_counts_p20300101'`), "day 1's counts dropped")

	events, err := st.AuditRecent(context.Background(), store.AuditFilter{Since: day1, Limit: 1000})
	require.NoError(t, err)
	days := map[int]int{}
	for _, e := range events {
		if e.Route == "/v1/restaurants" {
			days[e.At.UTC().Day()]++
		}
	}
	require.Equal(t, map[int]int{2: 4, 3: during}, days, "one read across partitions")
}

// An upgraded installation: events from before partitioning live in the
// one partition migration 00009 attached (audit_events_before_*), which
// spans every earlier day. Retention deletes its events older than
// FOODSAFE_AUDIT_RETENTION from the first run, in batches, and keeps the
// rest and the partition.
func TestAuditRetentionBeforePartitioning(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	st := a.store()
	ctx := context.Background()
	count := func(query string) int {
		var n int
		require.NoError(t, st.Pool().QueryRow(ctx, query).Scan(&n))
		return n
	}
	_, err := st.Pool().Exec(ctx, `
		INSERT INTO audit_events (occurred_at, method, route, status, request_id)
		SELECT now() - interval '500 days' - g * interval '1 minute', 'GET', '/v1/restaurants', 200, 'old-' || g
		FROM generate_series(1, 250) AS g
		UNION ALL
		SELECT now() - interval '10 days', 'GET', '/v1/restaurants', 200, 'recent'`)
	require.NoError(t, err)
	const before = `SELECT count(*) FROM foodsafe_audit_partition_bounds() WHERE partition LIKE 'audit\_events\_before\_%'`
	require.Equal(t, 1, count(before))
	require.Equal(t, 251, count(`SELECT count(*) FROM audit_events WHERE request_id LIKE 'old-%' OR request_id = 'recent'`))

	set := maintain.Settings{AuditRetention: 400 * 24 * time.Hour, Batch: 100}
	require.NoError(t, a.maintenance(time.Now, set).RunOnce(ctx))
	require.Zero(t, count(`SELECT count(*) FROM audit_events WHERE request_id LIKE 'old-%'`), "older than retention: deleted")
	require.Equal(t, 1, count(`SELECT count(*) FROM audit_events WHERE request_id = 'recent'`), "within retention: kept")
	require.Equal(t, 1, count(before), "the partition stays until its newest day passes retention")
}

// hookedBlobs is the app's real file store with a hook run before each
// deletion, to act while the collector holds its locks.
type hookedBlobs struct {
	blob.Store
	beforeDelete func(sha string)
}

func (h hookedBlobs) Delete(ctx context.Context, sha string) error {
	h.beforeDelete(sha)
	return h.Store.Delete(ctx, sha)
}

// hasBytes reports whether the file store holds the bytes of sha.
func (a *app) hasBytes(sha string) bool {
	a.t.Helper()
	for _, p := range a.storedObjects() {
		if strings.HasSuffix(p, sha) {
			return true
		}
	}
	return false
}

// The collector deletes bytes only when no live asset and no delivery
// image has used them for the grace period, counting references across
// restaurants, on every file store; an upload of the same bytes that
// arrives while the collector deletes them ends with the bytes stored.
func TestBlobCollection(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testBlobCollection)
}

func testBlobCollection(t *testing.T, b backend) {
	t0 := time.Now().Truncate(time.Second)
	clock := &testClock{now: t0}
	a := b.newApp(t, withClock(clock.Now))
	a.addRestaurants("r1", "r2")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read", "deliveries:write", "delivery-images:write"), grant("r2", col+":write", col+":read"))
	file := func(name string) []byte { return []byte("bytes of " + name + " " + t0.String()) }
	shared, deleted, renamed, imaged, late, racing := file("shared"), file("deleted"), file("renamed"), file("imaged"), file("late"), file("racing")
	imaged = append(photoBytes("image/jpeg", 0), imaged...) // also a delivery image: a photograph
	attach := func(restaurant, id string, body []byte) {
		t.Helper()
		a.put(key, restaurant, col, id, id+"-m1", picture(id+".jpg", nil))
		r := a.upload(key, assetPath(restaurant, col, id, id+".jpg"), "image/jpeg", digestHeader(body), body)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	gone := func(restaurant, id, mutation string) {
		t.Helper()
		r := a.ingest(key, restaurant, col, id, mutation, snapshot(restaurant, id, mutation, 1_700_000_000_000, true, nil))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	attach("r1", "p-shared", shared)
	attach("r2", "p-shared", shared) // the same bytes in another restaurant
	attach("r1", "p-deleted", deleted)
	attach("r1", "p-renamed", renamed)
	attach("r2", "p-imaged", imaged)
	attach("r1", "p-late", late)
	a.put(key, "r1", col, "p-racing", "p-racing-m1", picture("p-racing.jpg", nil))
	attach("r1", "p-racing-old", racing)
	require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
	r := a.upload(key, "/v1/ingest/restaurants/r1/deliveries/d1/images/i1", "image/jpeg", digestHeader(imaged), imaged)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

	gone("r2", "p-shared", "p-shared-gone")                                         // r1 still uses the bytes
	gone("r1", "p-deleted", "p-deleted-gone")                                       // nobody does
	a.put(key, "r1", col, "p-renamed", "p-renamed-m3", picture("another.jpg", nil)) // names another file
	gone("r2", "p-imaged", "p-imaged-gone")                                         // a delivery image still does
	gone("r1", "p-racing-old", "p-racing-gone")                                     // nobody does, until the race below
	clock.Set(t0.Add(6 * 24 * time.Hour))
	gone("r1", "p-late", "p-late-gone") // dies six days later

	const grace = 7 * 24 * time.Hour
	collect := func(set maintain.Settings, hook func(string)) {
		t.Helper()
		set.BlobGrace = grace
		r := maintain.New(a.store(), hookedBlobs{a.svc.Blobs, hook}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, set, 0, clock.Now)
		require.NoError(t, r.RunOnce(context.Background()))
	}
	noHook := func(string) {}
	all := map[string][]byte{"shared": shared, "deleted": deleted, "renamed": renamed, "imaged": imaged, "late": late, "racing": racing}
	present := func() map[string]bool {
		out := map[string]bool{}
		for name, body := range all {
			out[name] = a.hasBytes(sha256Hex(body))
		}
		return out
	}
	allPresent := map[string]bool{"shared": true, "deleted": true, "renamed": true, "imaged": true, "late": true, "racing": true}

	collect(maintain.Settings{}, noHook)
	require.Equal(t, allPresent, present(), "within the grace period nothing goes")

	clock.Set(t0.Add(8 * 24 * time.Hour))
	collect(maintain.Settings{DryRun: true}, noHook)
	require.Equal(t, allPresent, present(), "a dry run deletes nothing")

	// While the collector deletes the racing bytes (holding their claim),
	// a device uploads the same bytes for another record.
	uploaded := make(chan response, 1)
	collect(maintain.Settings{}, func(sha string) {
		if sha != sha256Hex(racing) {
			return
		}
		go func() {
			uploaded <- a.do(uploadReq(key, assetPath("r1", col, "p-racing", "p-racing.jpg"), "image/jpeg", digestHeader(racing), racing))
		}()
		citus := ""
		if os.Getenv("CITUS_DATABASE_URL") != "" {
			citus = "%insert into%blobs%"
		}
		a.waitForLockWaiter("BlobClaim", citus)
	})
	up := <-uploaded
	require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)
	require.Equal(t, map[string]bool{"shared": true, "deleted": false, "renamed": false, "imaged": true, "late": true, "racing": true},
		present(), "only bytes no live asset or image used for the grace period are gone")
	items := a.fileList(key, assetsPath("r1", col, "p-racing"))
	require.Len(t, items, 1)
	require.Equal(t, sha256Hex(racing), items[0].SHA256)
	if !a.onS3() {
		require.Equal(t, racing, a.download(items[0].URL).Body, "the upload that met the collector is served")
	}
	require.Len(t, a.fileList(key, assetsPath("r1", col, "p-shared")), 1)

	clock.Set(t0.Add(14 * 24 * time.Hour))
	collect(maintain.Settings{}, noHook)
	require.Equal(t, map[string]bool{"shared": true, "deleted": false, "renamed": false, "imaged": true, "late": false, "racing": true},
		present(), "a week after the last reference died")

	// A record that comes back names its file again as pending: its bytes
	// are gone, so it must be uploaded again rather than point at nothing.
	e := a.put(key, "r1", col, "p-deleted", "p-deleted-back", picture("p-deleted.jpg", nil))
	require.Equal(t, map[string]any{"objectKey": "p-deleted.jpg", "status": "pending"}, assetOf(t, e))
	r = a.upload(key, assetPath("r1", col, "p-deleted", "p-deleted.jpg"), "image/jpeg", digestHeader(deleted), deleted)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.True(t, a.hasBytes(sha256Hex(deleted)))
}

// waitForLockWaiter returns once a statement whose text contains marker
// waits for a lock in the app's database (on Citus, a shard statement
// matching citusPattern).
func (a *app) waitForLockWaiter(marker, citusPattern string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against hanging, not a measure
	defer cancel()
	for {
		var n int
		// On Citus the wait is on the workers' shard placements, under the
		// shard's statement text: citus_lock_waits sees it.
		err := a.store().Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, marker).Scan(&n)
		if err == nil && n == 0 && citusPattern != "" {
			err = a.store().Pool().QueryRow(ctx, `SELECT count(*) FROM citus_lock_waits WHERE blocked_statement ILIKE $1`,
				citusPattern).Scan(&n)
		}
		require.NoError(a.t, err, "waiting for a statement %s to wait for a lock", marker)
		if n > 0 {
			return
		}
	}
}

// `foodsafe maintain` as operators run it from cron: --dry-run reports and
// changes nothing, --once does the work, bad flags are exit status 2.
func TestMaintainCommand(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write"))
	a.put(key, "r1", "areas", "a", "a1", area("v1"))
	a.put(key, "r1", "areas", "a", "a2", area("v2"))
	_, err := a.store().Pool().Exec(context.Background(), `UPDATE record_changes SET superseded_at = 0 WHERE mutation_id = 'a1'`)
	require.NoError(t, err)

	r := a.cli("maintain", "--dry-run")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "--dry-run needs --once")
	require.Equal(t, 2, a.cli("maintain", "--once", "extra").Code)
	require.Equal(t, 2, a.cli("maintain", "--every", "1m").Code)

	r = a.cli("maintain", "--once", "--dry-run")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, `"msg":"would compact"`)
	require.Contains(t, r.Stderr, `"versions":1`)
	hasData, _ := a.changeRow("r1", "a1")
	require.True(t, hasData, "a dry run changes nothing")

	r = a.cli("maintain", "--once")
	require.Equal(t, 0, r.Code, r.Stderr)
	for _, job := range []string{maintain.JobCompaction, maintain.JobAuditPartitions, maintain.JobBlobGC, maintain.JobUploadExpiry} {
		require.Contains(t, r.Stderr, `"msg":"maintenance job done","job":"`+job+`"`)
	}
	hasData, compacted := a.changeRow("r1", "a1")
	require.False(t, hasData)
	require.True(t, compacted)
}

// An asset upload replayed after its change was compacted says so too.
func TestCompactedUploadReplay(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_800_000_000_000)
	clock := &testClock{now: t0}
	a := newApp(t, withClock(clock.Now))
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read"))
	photo := []byte("a photograph of a clean fryer")
	a.put(key, "r1", col, "p1", "p1-m1", picture("p1.jpg", nil))
	upload := func() response {
		return a.upload(key, assetPath("r1", col, "p1", "p1.jpg"), "image/jpeg", digestHeader(photo), photo)
	}
	first := upload()
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Body)
	require.Empty(t, first.Header.Get("Idempotent-Replayed-State"))
	// The device sends the record again: the upload's change is superseded.
	a.put(key, "r1", col, "p1", "p1-m2", picture("p1.jpg", nil))

	clock.Set(t0.Add(26 * time.Hour))
	require.NoError(t, a.maintenance(clock.Now, maintain.Settings{}).RunOnce(context.Background()))
	r := upload()
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	require.Equal(t, "compacted", r.Header.Get("Idempotent-Replayed-State"))
	var body struct{ Data map[string]any }
	r.JSON(t, &body)
	require.NotContains(t, body.Data, "data")
	require.Equal(t, false, body.Data["deleted"])
	var firstBody struct{ Data map[string]any }
	first.JSON(t, &firstBody)
	require.Equal(t, firstBody.Data["mutationId"], body.Data["mutationId"], "the upload's own change")
	require.Len(t, a.fileList(key, assetsPath("r1", col, "p1")), 1, "the file is still listed")
}
