package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// widestPut ingests one version of record id in collection c of r1, with
// data of about size bytes (deleted when size is 0), through the store,
// and returns its mutation id.
func widestPut(t *testing.T, st *store.Store, c, id string, size int) string {
	t.Helper()
	var n int
	require.NoError(t, st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM record_changes`).Scan(&n))
	m := fmt.Sprintf("w%04d", n+1)
	d := sha256.Sum256([]byte(m))
	mut := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: c, RecordID: id},
		MutationID: m, Deleted: size == 0, CapturedAt: 7, PayloadVersion: 1, RequestSHA256: d[:]}
	if size > 0 {
		mut.Data = []byte(fmt.Sprintf(`{"name":%q}`, strings.Repeat("x", max(size-11, 1))))
	}
	_, _, err := st.RecordIngest(context.Background(), mut, 11)
	require.NoError(t, err)
	return m
}

// widest is the stream's max_record_bytes (nil: unknown).
func widest(t *testing.T, st *store.Store, c string) *int64 {
	t.Helper()
	var w *int64
	require.NoError(t, st.Pool().QueryRow(context.Background(),
		`SELECT max_record_bytes FROM collection_streams WHERE restaurant_id = 'r1' AND collection = $1`, c).Scan(&w))
	return w
}

// Ingest keeps each stream's largest record version in
// collection_streams.max_record_bytes, as the walk statements read it:
// octet_length of the stored data. A larger version raises it, a smaller
// one or a deletion never lowers it; the statements ingest runs on Citus
// raise it as the plain one does.
func TestStreamKeepsItsWidestRecord(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	_, err := st.Pool().Exec(context.Background(), `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	exact := func(c string) int64 {
		var n int64
		require.NoError(t, st.Pool().QueryRow(context.Background(),
			`SELECT COALESCE(max(octet_length(data::text)), 0) FROM record_changes WHERE restaurant_id = 'r1' AND collection = $1`, c).Scan(&n))
		return n
	}
	widestPut(t, st, "areas", "a1", 100)
	require.Equal(t, exact("areas"), *widest(t, st, "areas"))
	require.EqualValues(t, 100, *widest(t, st, "areas"))
	widestPut(t, st, "areas", "a2", 5000)
	require.EqualValues(t, 5000, *widest(t, st, "areas"))
	widestPut(t, st, "areas", "a2", 200) // the large record shrinks: its old version is still walked as of a pin
	widestPut(t, st, "areas", "a1", 0)
	require.EqualValues(t, 5000, *widest(t, st, "areas"))
	require.Equal(t, exact("areas"), *widest(t, st, "areas"))

	st.UseDistributedIngest()
	widestPut(t, st, "users", "u1", 300)
	require.EqualValues(t, 300, *widest(t, st, "users"))
	widestPut(t, st, "users", "u2", 9000)
	widestPut(t, st, "users", "u3", 10)
	require.EqualValues(t, 9000, *widest(t, st, "users"))
	widestPut(t, st, "areas", "a3", 7000)
	require.EqualValues(t, 7000, *widest(t, st, "areas"))
}

// walkPlain runs a plain walk statement (RecordWalkFirstPage,
// RecordWalkPage) under EXPLAIN ANALYZE and returns the loops of its scan
// of the page's current versions in records_walk_idx (0: "never
// executed"; the reads of its CTEs, head, pin and bound, are not this
// scan), then runs it and reports whether it declined the page: its only
// row is then the sum_bytes marker.
func walkPlain(t *testing.T, st *store.Store, statement string, args ...any) (loops int, declined bool) {
	t.Helper()
	ctx := context.Background()
	var out []byte
	require.NoError(t, st.Pool().QueryRow(ctx,
		`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) `+statement, args...).Scan(&out))
	var plans []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal(out, &plans))
	var scans []int
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.NodeType == "Index Scan" && n.IndexName == "records_walk_idx" {
			scans = append(scans, n.ActualLoops)
		}
		for _, c := range n.Plans {
			if c.ParentRelationship != "InitPlan" && c.ParentRelationship != "SubPlan" {
				walk(c)
			}
		}
	}
	walk(plans[0].Plan)
	require.Len(t, scans, 1, "the statement scans the page's current versions once: %s", out)
	rows, err := st.Pool().Query(ctx, statement, args...)
	require.NoError(t, err)
	sums, n := 0, 0
	for rows.Next() {
		values, err := rows.Values()
		require.NoError(t, err)
		n++
		if values[len(values)-1] == true {
			sums++
		}
	}
	require.NoError(t, rows.Err())
	require.True(t, sums == 0 || sums == 1 && n == 1, "a declined page is the marker alone: %d rows, %d markers", n, sums)
	return scans[0], sums == 1
}

type planNode struct {
	NodeType           string     `json:"Node Type"`
	IndexName          string     `json:"Index Name"`
	ParentRelationship string     `json:"Parent Relationship"`
	ActualLoops        int        `json:"Actual Loops"`
	Plans              []planNode `json:"Plans"`
}

// The plain walk statements return the page of a stream whose largest
// record times the page's rows stays under the byte bound, with no byte
// sum in their plan; for a stream with a record that could fill the
// bound, or whose largest record is unknown (a stream written before
// migration 00042 knew it), they never execute their scan and return only
// the sum_bytes marker, and the summed statements (which never decline)
// read the page bounded by its bytes. Both statements, first page and
// pinned page, a page with no byte bound, which is never declined, and a
// stream never written, which has no row to read its size from.
func TestWalkSumsBytesOnlyWhenARecordCouldReachTheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	for i := range 30 {
		widestPut(t, st, "areas", fmt.Sprintf("a%02d", i), 100)
	}
	for i := range 3 {
		widestPut(t, st, "users", fmt.Sprintf("u%02d", i), 100)
	}
	widestPut(t, st, "users", "big", 40_000)
	const bound = int64(1 << 20)
	maxBytes := bound
	first := func(c string, rows int32, maxBytes *int64) (int, bool) {
		return walkPlain(t, st, db.RecordWalkFirstPage, "r1", c, int64(0), rows, maxBytes)
	}
	pinned := func(c string, rows int32, maxBytes *int64) (int, bool) {
		pin := int64(3)
		return walkPlain(t, st, db.RecordWalkPage, "r1", c, &pin, int64(0), rows, maxBytes)
	}
	type run struct {
		loops    int
		declined bool
	}
	for name, plain := range map[string]func(string, int32, *int64) (int, bool){"first page": first, "pinned page": pinned} {
		// 101 rows of at most 100 bytes: far under 1 MiB.
		loops, declined := plain("areas", 101, &maxBytes)
		require.Equal(t, run{1, false}, run{loops, declined}, "%s, small records: the page, unsummed", name)
		// 101 rows of up to 40,000 bytes could reach 1 MiB.
		loops, declined = plain("users", 101, &maxBytes)
		require.Equal(t, run{0, true}, run{loops, declined}, "%s, a large record: declined, nothing scanned", name)
		// 26 rows of up to 40,000 bytes stay under it (26 x 40,000 < 1 MiB).
		loops, declined = plain("users", 26, &maxBytes)
		require.Equal(t, run{1, false}, run{loops, declined}, "%s, a large record but few rows", name)
		loops, declined = plain("users", 101, nil)
		require.Equal(t, run{1, false}, run{loops, declined}, "%s, no byte bound", name)
		loops, declined = plain("products", 101, &maxBytes)
		require.Equal(t, run{1, false}, run{loops, declined}, "%s, a stream never written", name)
	}
	// An empty range is never declined: there is no page to sum, only the
	// marker carrying the pin (the scan, off, never runs).
	users := int64(4)
	loops, declined := walkPlain(t, st, db.RecordWalkFirstPage, "r1", "users", users, int32(101), &maxBytes)
	require.Equal(t, run{0, false}, run{loops, declined}, "first page, a large record, nothing after the position")
	loops, declined = walkPlain(t, st, db.RecordWalkPage, "r1", "users", &users, users, int32(101), &maxBytes)
	require.Equal(t, run{0, false}, run{loops, declined}, "pinned page, a large record, an empty range")
	_, err = st.Pool().Exec(ctx, `UPDATE collection_streams SET max_record_bytes = NULL WHERE collection = 'areas'`)
	require.NoError(t, err)
	loops, declined = first("areas", 101, &maxBytes)
	require.Equal(t, run{0, true}, run{loops, declined}, "a stream whose largest record is unknown is summed")

	// The summed statements never decline, and cut a page by its bytes:
	// of three records of 100 bytes and one of 40,000, under a bound of
	// 150, the rows up to the one reaching it (the second) and one more
	// are sent, and the large one is not.
	small := int64(150)
	q := db.New(st.Pool())
	firstRows, err := q.RecordWalkFirstPageSummed(ctx, db.RecordWalkFirstPageSummedParams{RestaurantID: "r1", Collection: "users",
		MaxRows: 101, MaxBytes: &small})
	require.NoError(t, err)
	pin := int64(4)
	pinnedRows, err := q.RecordWalkPageSummed(ctx, db.RecordWalkPageSummedParams{RestaurantID: "r1", Collection: "users",
		Pinned: &pin, MaxRows: 101, MaxBytes: &small})
	require.NoError(t, err)
	for name, ids := range map[string][]string{"first page": recordIDs(firstRows), "pinned page": recordIDs(pinnedRows)} {
		require.Equal(t, []string{"u00", "u01", "u02"}, ids, "%s, summed", name)
	}
	for _, r := range firstRows {
		require.False(t, r.SumBytes)
	}
	for _, r := range pinnedRows {
		require.False(t, r.SumBytes)
	}
}

// recordIDs are the record ids of a summed walk statement's rows.
func recordIDs[R db.RecordWalkFirstPageSummedRow | db.RecordWalkPageSummedRow](rows []R) []string {
	var ids []string
	for _, r := range rows {
		ids = append(ids, db.RecordWalkPageSummedRow(r).RecordID)
	}
	return ids
}

// A walk of a stream of small records (each page takes the branch without
// the byte sum) whose records grow large between its pages: the pages
// after the growth sum (the stream's largest record is read in the same
// snapshot as the page's rows), each page stays under the bound before
// its last record, and the walk still returns every record once, as it
// stood at the pin.
func TestWalkOfRecordsThatGrowStaysBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	const records, budget = 30, 20_000
	asOfPin := map[string]string{}
	for i := range records {
		id := fmt.Sprintf("a%02d", i)
		asOfPin[id] = widestPut(t, st, "areas", id, 150)
	}
	seen := map[string]int{}
	var pos *store.WalkPos
	for pages := 0; ; pages++ {
		require.Less(t, pages, 50)
		page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 5, MaxBytes: budget, Pos: pos})
		require.NoError(t, err)
		var before int
		for k, e := range page.Records {
			seen[e.ID]++
			require.Equal(t, asOfPin[e.ID], e.MutationID, "record %s as of the pin", e.ID)
			if k < len(page.Records)-1 {
				before += len(e.Data)
			}
		}
		require.Less(t, before, budget, "page %d: what comes before its last record is under the bound", pages)
		if page.Next == nil {
			break
		}
		pos = page.Next
		if pages == 1 {
			// Records not returned yet grow to a third of the bound, and
			// new large ones are written after the pin.
			for i := 12; i < records; i += 2 {
				widestPut(t, st, "areas", fmt.Sprintf("a%02d", i), budget/3)
			}
			widestPut(t, st, "areas", "new", budget)
		}
	}
	require.Len(t, seen, records)
	for id, c := range seen {
		require.Equal(t, 1, c, "record %s", id)
	}
	// A new walk sees the grown records, and its first page is cut by
	// bytes, well before its limit.
	page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 100, MaxBytes: budget})
	require.NoError(t, err)
	require.NotNil(t, page.Next)
	require.Less(t, len(page.Records), records+1)
}

// A stream whose walk page the plain statement declined is remembered:
// its later pages run the summed statement alone, one statement instead
// of two, walk pages and feed reads alike, and come back as they would
// otherwise; a stream of small records is never summed.
func TestWalkRemembersStreamsThatNeedTheSum(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, counter := openCountedStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	for i := range 3 {
		widestPut(t, st, "users", fmt.Sprintf("u%02d", i), 100)
		widestPut(t, st, "areas", fmt.Sprintf("a%02d", i), 100)
	}
	widestPut(t, st, "users", "big", 40_000)
	// Pages of 2 records and one more: 3 x 40,000 could reach 100,000
	// bytes, 3 x 100 could not.
	const budget = 100_000
	walk := func(c string) (ids []string, statements []int) {
		var pos *store.WalkPos
		for {
			counter.take()
			page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: c, Limit: 2, MaxBytes: budget, Pos: pos})
			require.NoError(t, err)
			n, _, _ := counter.take()
			statements = append(statements, n)
			for _, e := range page.Records {
				ids = append(ids, e.ID)
			}
			if page.Next == nil {
				return ids, statements
			}
			pos = page.Next
		}
	}
	ids, statements := walk("users")
	require.Equal(t, []string{"u00", "u01", "u02", "big"}, ids)
	require.Equal(t, []int{2, 1}, statements, "declined once, then summed at once")
	ids, statements = walk("users")
	require.Equal(t, []string{"u00", "u01", "u02", "big"}, ids, "a new walk, summed from its first page")
	require.Equal(t, []int{1, 1}, statements)
	ids, statements = walk("areas")
	require.Equal(t, []string{"a00", "a01", "a02"}, ids)
	require.Equal(t, []int{1, 1}, statements, "small records: the plain statement, never declined")

	// The feed reads a stream the same way: its reads of users, declined
	// on the first page (one more pipeline), are summed at once after.
	groups := []store.StreamGroup{{Restaurants: []string{"r1"}, Streams: []string{"users"}}}
	st2, counter2 := openCountedStore(t)
	_, err = st2.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	for i := range 3 {
		widestPut(t, st2, "users", fmt.Sprintf("u%02d", i), 100)
	}
	widestPut(t, st2, "users", "big", 40_000)
	// Pages of 2 items: a read of 2 or 3 rows of up to 40,000 bytes could
	// reach 70,000.
	_, costs := feedCosts(t, st2, counter2, groups, 2, 70_000)
	again, costsAgain := feedCosts(t, st2, counter2, groups, 2, 70_000)
	require.Equal(t, []string{"r1/users/u00", "r1/users/u01", "r1/users/u02", "r1/users/big"}, again)
	require.Greater(t, costs[0].roundTrips, costsAgain[0].roundTrips, "the first page's declined read is summed at once the second time: %+v, %+v", costs, costsAgain)
}
