package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// BenchmarkPinnedWalkPage: a page of a walk pinned behind many updates
// against the same page pinned at the stream's head, on a stream of
// 100,000 records of which 100 were then updated 20,000 times in all
// (FOODSAFE_PIN_UPDATES), as ingest writes them, on tables never
// ANALYZEd, then ANALYZEd, then VACUUMed (a plain VACUUM, as autovacuum
// runs it: the walk index's dead entries of the updates go). "pinned" reads the 100 records changed since
// the pin as they stood at it; "head" is the same page of a walk pinned
// after the updates (nothing changed since its pin). The first page after
// the walk's first holds none of the records changed; "changed-in-page"
// is the page around the first of them, which the pinned walk returns as
// it stood at the pin. Each case logs its EXPLAIN (ANALYZE, BUFFERS)
// once: the pinned page's cost follows the versions it returns, not the
// versions written or the records changed since the pin.
func BenchmarkPinnedWalkPage(b *testing.B) {
	const n, changed, limit = 100_000, 100, 50
	updates := 20_000
	if s := os.Getenv("FOODSAFE_PIN_UPDATES"); s != "" {
		var err error
		updates, err = strconv.Atoi(s)
		require.NoError(b, err, "FOODSAFE_PIN_UPDATES")
	}
	ctx := context.Background()
	dbURL := testdb.URL(b)
	seedRecordsNoStatsSQL(b, dbURL, "r1", "areas", n)
	st, rec := recordingStore(b, dbURL)

	first, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit})
	require.NoError(b, err)
	pinned := *first.Next
	ingestUpdates(b, st, changed, updates, n)
	head, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit})
	require.NoError(b, err)
	atHead := store.WalkPos{Pinned: head.Pinned, After: pinned.After}
	// The page (after, after+limit] around rec-<n/changed>, the first
	// record changed: records and sequences are numbered alike by the seed.
	around := int64(n/changed - limit/2)
	changedAtHead := store.WalkPos{Pinned: head.Pinned, After: around}
	changedPinned := store.WalkPos{Pinned: pinned.Pinned, After: around}
	firstChanged := fmt.Sprintf("rec-%07d", n/changed)

	for _, stats := range []string{"never-analyzed", "analyzed", "vacuumed"} {
		switch stats {
		case "analyzed":
			analyze(b, dbURL)
		case "vacuumed":
			// A plain VACUUM, autovacuum's kind.
			for _, table := range []string{"records", "record_changes"} {
				_, err := st.Pool().Exec(ctx, "VACUUM "+table)
				require.NoError(b, err)
			}
		}
		for _, c := range []struct {
			name string
			pos  store.WalkPos
		}{{"head", atHead}, {"pinned", pinned}, {"head/changed-in-page", changedAtHead}, {"pinned/changed-in-page", changedPinned}} {
			rec.take()
			page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: &c.pos})
			require.NoError(b, err)
			require.Len(b, page.Records, limit)
			if c.pos == changedPinned {
				i := slices.IndexFunc(page.Records, func(e wire.Envelope) bool { return e.ID == firstChanged })
				require.GreaterOrEqual(b, i, 0, "the page holds %s", firstChanged)
				require.False(b, strings.HasPrefix(page.Records[i].MutationID, "upd-"), "%s as it stood at the pin", firstChanged)
			}
			sent := rec.take()
			require.Len(b, sent, 1)
			b.Logf("%s/%s (%d updates of %d records since the pin):\n%s", stats, c.name, updates, changed,
				explainAnalyze(b, dbURL, sent[0]))
			b.Run(stats+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: &c.pos})
					if err != nil || len(page.Records) != limit {
						b.Fatalf("page: %d rows, %v", len(page.Records), err)
					}
				}
			})
		}
	}
}

// ingestUpdates writes `updates` changes through the store's ingest, round
// robin over the records rec-0000001... of seedRecordsSQL whose numbers are
// multiples of n/changed (so `changed` records, spread over the stream).
func ingestUpdates(t testing.TB, st *store.Store, changed, updates, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range updates {
		body := []byte(fmt.Sprintf(`{"name":"upd-%d","isDeleted":false}`, i))
		d := sha256.Sum256(body)
		id := fmt.Sprintf("rec-%07d", (i%changed+1)*(n/changed))
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas",
			RecordID: id}, MutationID: fmt.Sprintf("upd-%d", i), Data: body,
			CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
		require.NoError(t, err)
	}
}

// explainAnalyze runs q under the service's planner settings as EXPLAIN
// (ANALYZE, BUFFERS) and returns the plan as text.
func explainAnalyze(t testing.TB, dbURL string, q sentQuery) string {
	t.Helper()
	ctx := context.Background()
	conn := plannedConn(t, dbURL)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q.SQL, q.Args...)
	require.NoError(t, err)
	var out strings.Builder
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		out.WriteString(line)
		out.WriteByte('\n')
	}
	require.NoError(t, rows.Err())
	return out.String()
}

// A walk pinned before thousands of updates, deletions and creations of
// its records answers every page exactly as it did before them: each
// record as it stood at the pin (the version current then, not the
// first or the latest one), the records deleted since still live, the
// records created since absent; resumed from every page's cursor, with
// and without statistics. Two shapes of history since the pin: many
// updates of few records (5,000 of 100) and one update each of many (300).
func TestPinnedWalkBehindManyUpdates(t *testing.T) {
	t.Parallel()
	const n, changed, limit = 2_000, 100, 37
	ctx := context.Background()
	dbURL := testdb.URL(t)
	seedRecordsNoStatsSQL(t, dbURL, "r1", "areas", n)
	st, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	write := func(id, mutation string, deleted bool) {
		t.Helper()
		m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: id},
			MutationID: mutation, Deleted: deleted, CapturedAt: 1, PayloadVersion: 1}
		if !deleted {
			m.Data = []byte(fmt.Sprintf(`{"name":%q,"isDeleted":false}`, mutation))
		}
		d := sha256.Sum256(append([]byte(mutation), m.Data...))
		m.RequestSHA256 = d[:]
		_, _, err := st.RecordIngest(ctx, m, 1)
		require.NoError(t, err)
	}
	// History before the pin: the version a pin needs is neither a
	// record's first nor its last.
	id := func(i int) string { return fmt.Sprintf("rec-%07d", (i%changed+1)*(n/changed)) }
	for i := range 3 * changed {
		write(id(i), fmt.Sprintf("before-%d", i), false)
	}

	// walk reads the whole walk at its pin, page by page, with the
	// position of each page.
	walk := func() (pages []store.WalkPage, pos []store.WalkPos) {
		t.Helper()
		var at *store.WalkPos
		for {
			page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: at})
			require.NoError(t, err)
			if at == nil {
				// The first page pins the head it reads; a pinned walk
				// from the start is after 0 at that pin.
				at = &store.WalkPos{Pinned: page.Pinned}
			}
			pages, pos = append(pages, page), append(pos, *at)
			if page.Next == nil {
				break
			}
			at = page.Next
		}
		require.Greater(t, len(pages), n/limit)
		return pages, pos
	}
	// again reads the same pages again from their positions.
	again := func(what string, pages []store.WalkPage, pos []store.WalkPos) {
		t.Helper()
		for _, stats := range []string{"never-analyzed", "analyzed"} {
			if stats == "analyzed" {
				analyze(t, dbURL)
			}
			for i := range pos {
				page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: &pos[i]})
				require.NoError(t, err)
				require.Equal(t, pages[i], page, "%s, %s: page %d of the walk pinned at %d", what, stats, i, pos[i].Pinned)
			}
		}
	}

	// 5,000 updates of 100 records, one in ten of them
	// deleted (some then written again), and records created.
	pages, pos := walk()
	for i := range 50 * changed {
		write(id(i), fmt.Sprintf("after-%d", i), i%10 == 3)
	}
	for i := range 50 {
		write(fmt.Sprintf("new-%d", i), fmt.Sprintf("new-%d", i), false)
	}
	again("50 updates per record", pages, pos)

	// 300 records updated once, some deleted.
	pages, pos = walk()
	for i := range 300 {
		write(fmt.Sprintf("rec-%07d", i*6+1), fmt.Sprintf("once-%d", i), i%7 == 0)
	}
	again("1 update per record", pages, pos)
}
