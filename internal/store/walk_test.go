package store_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
)

// The hand-written scan of a walk page (pgrows.RecordWalkPageInto, and
// pgrows.RecordWalkFirstPageInto for a page with no pin) returns
// exactly what the function sqlc generates for the statement returns, for
// every kind of row the statement yields: current versions, live and
// deleted, with and without a source version; a version read as of the
// pin; the marker of an empty range, which is what a collection with no
// record yields. It appends to the slice it is given, so what a reused
// buffer held before is kept before the page, never mixed into it.
func TestRecordWalkPageIntoAgrees(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	put := func(record, mutation string, deleted bool) {
		m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: record},
			MutationID: mutation, Deleted: deleted, CapturedAt: 7, PayloadVersion: 2}
		if !deleted {
			m.Data = []byte(fmt.Sprintf(`{"name": %q, "isDeleted": false}`, mutation))
		}
		d := sha256.Sum256([]byte(mutation))
		m.RequestSHA256 = d[:]
		_, _, err := st.RecordIngest(ctx, m, 11)
		require.NoError(t, err)
	}
	for i := 1; i <= 5; i++ {
		put(fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), false)
	}
	put("a2", "m2-gone", true)
	_, err = st.Pool().Exec(ctx, `UPDATE records SET source_version = '4.2.0' WHERE record_id = 'a4'`)
	require.NoError(t, err)
	pin := int64(6)
	put("a3", "m3-later", false) // a3 as of the pin is read from its history

	q := db.New(st.Pool())
	page := func(pinned *int64, after int64, max int32) db.RecordWalkPageParams {
		return db.RecordWalkPageParams{RestaurantID: "r1", Collection: "areas", Pinned: pinned, AfterSequence: after, MaxRows: max}
	}
	cases := map[string]db.RecordWalkPageParams{
		"first page":           page(nil, 0, 101),
		"pinned, with history": page(&pin, 0, 101),
		"cut by max rows":      page(&pin, 1, 2),
		"empty range (marker)": page(&pin, pin, 101),
		"beyond the head":      page(nil, 99, 101),
		"changes since 2":      page(nil, 2, 101),
		"unknown collection":   {RestaurantID: "r1", Collection: "nothing", AfterSequence: 0, MaxRows: 101},
	}
	// Bounded by 4,000 bytes, 101 rows of the stream's largest record
	// (about 40 bytes) could reach the bound: the plain statements decline
	// these pages and the summed ones read them (the rows, about 340
	// bytes each as the scan counts them, stay under it). An empty range
	// is not declined.
	bound := int64(4000)
	for name, p := range map[string]db.RecordWalkPageParams{
		"summed first page":           page(nil, 0, 101),
		"summed pinned, with history": page(&pin, 0, 101),
		"summed changes since 2":      page(nil, 2, 101),
		"bounded empty range":         page(&pin, pin, 101),
		"bounded beyond the head":     page(nil, 99, 101),
	} {
		p.MaxBytes = &bound
		cases[name] = p
	}
	// The scan decodes the columns itself when they have the types it
	// reads (data as json, or as jsonb before migration 00013 converts a
	// table), and leaves a column of any other type to pgx.
	alter := func(column, typ string) {
		for _, table := range []string{"records", "record_changes"} {
			_, err := st.Pool().Exec(ctx, `ALTER TABLE `+table+` ALTER COLUMN `+column+` TYPE `+typ+` USING `+column+`::`+typ)
			require.NoError(t, err)
		}
		st.Pool().Reset() // prepared statements describe the old types
	}
	for _, columns := range []struct{ name, column, typ string }{
		{"data as json", "", ""},
		{"data as jsonb", "data", "jsonb"},
		{"an undecoded type, scanned by pgx", "payload_version", "bigint"},
	} {
		if columns.column != "" {
			alter(columns.column, columns.typ)
		}
		for name, p := range cases {
			agree(t, st.Pool(), columns.name+"/"+name, p)
		}
	}

	// The rows each kind yields are what the cases above say they are.
	rows, err := q.RecordWalkPage(ctx, page(&pin, 0, 101))
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, r := range rows {
		switch {
		case r.RecordID == "a2":
			kinds["deleted"] = r.Deleted && r.Data == nil
		case r.RecordID == "a3":
			kinds["as of the pin"] = r.MutationID == "m3"
		case r.RecordID == "a4":
			kinds["source version"] = r.SourceVersion != nil && *r.SourceVersion == "4.2.0"
		}
	}
	require.Equal(t, map[string]bool{"deleted": true, "as of the pin": true, "source version": true}, kinds)
}

// agree runs one page through the generated scan and the hand-written
// one, into an empty buffer and after a row a reused buffer held. A page
// the generated plain statement declines (its sum_bytes marker alone;
// the cases named "summed") is the generated summed statement's.
func agree(t *testing.T, conn db.DBTX, name string, p db.RecordWalkPageParams) {
	t.Run(name, func(t *testing.T) {
		ctx := context.Background()
		q := db.New(conn)
		want, err := q.RecordWalkPage(ctx, p)
		require.NoError(t, err)
		declined := len(want) == 1 && want[0].SumBytes
		require.Equal(t, strings.Contains(name, "summed"), declined, "the plain statement declines the summed cases alone: %+v", want)
		if declined {
			summed, err := q.RecordWalkPageSummed(ctx, db.RecordWalkPageSummedParams(p))
			require.NoError(t, err)
			want = nil
			for _, r := range summed {
				want = append(want, db.RecordWalkPageRow(r))
			}
		}
		require.NotEmpty(t, want, "every case yields a row (the marker at least)")
		got, _, gotDeclined, err := pgrows.RecordWalkPageInto(ctx, conn, p, make([]db.RecordWalkPageRow, 0, 1), false)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, declined, gotDeclined, "declined is reported")
		// Summed at once (a stream known to need it), the same rows.
		got, _, gotDeclined, err = pgrows.RecordWalkPageInto(ctx, conn, p, nil, true)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.False(t, gotDeclined)

		held := db.RecordWalkPageRow{RecordID: "held", Sequence: -1}
		got, _, _, err = pgrows.RecordWalkPageInto(ctx, conn, p, []db.RecordWalkPageRow{held}, false)
		require.NoError(t, err)
		require.Equal(t, append([]db.RecordWalkPageRow{held}, want...), got)

		if p.Pinned != nil {
			return
		}
		// Unpinned, the first-page statement returns the same rows, in
		// its generated scan and in the hand-written one.
		first := db.RecordWalkFirstPageParams{RestaurantID: p.RestaurantID, Collection: p.Collection,
			AfterSequence: p.AfterSequence, MaxRows: p.MaxRows, MaxBytes: p.MaxBytes}
		generated, err := q.RecordWalkFirstPage(ctx, first)
		require.NoError(t, err)
		if declined {
			require.Len(t, generated, 1)
			require.True(t, generated[0].SumBytes, "the first-page statement declines it too")
			summed, err := q.RecordWalkFirstPageSummed(ctx, db.RecordWalkFirstPageSummedParams(first))
			require.NoError(t, err)
			generated = nil
			for _, r := range summed {
				generated = append(generated, db.RecordWalkFirstPageRow(r))
			}
		}
		require.Len(t, generated, len(want))
		for n, r := range generated {
			require.Equal(t, want[n], db.RecordWalkPageRow(r))
		}
		got, _, gotDeclined, err = pgrows.RecordWalkFirstPageInto(ctx, conn, first, []db.RecordWalkPageRow{held}, false)
		require.NoError(t, err)
		require.Equal(t, append([]db.RecordWalkPageRow{held}, want...), got)
		require.Equal(t, declined, gotDeclined)
		got, _, _, err = pgrows.RecordWalkFirstPageInto(ctx, conn, first, nil, true)
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}

// A pinned page returns each record once, as it stood at the pin, at the
// edges of its range too: a pin at the head (nothing superseded after it,
// although the last write before it superseded a version) and a page
// whose range (after, P] is empty while versions in and next to it were
// superseded since. box() orders its corners, so without the statement's
// one-time filters an empty range turns into a neighbouring one here.
func TestPinnedPageEdges(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	put := func(record, mutation string) {
		body := []byte(fmt.Sprintf(`{"name": %q, "isDeleted": false}`, mutation))
		d := sha256.Sum256(body)
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas",
			RecordID: record}, MutationID: mutation, Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
		require.NoError(t, err)
	}
	walk := func(pinned, after int64) []string {
		page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 10,
			Pos: &store.WalkPos{Pinned: pinned, After: after}})
		require.NoError(t, err)
		require.Equal(t, pinned, page.Pinned)
		var got []string
		for _, r := range page.Records {
			got = append(got, r.ID+"="+r.MutationID)
		}
		return got
	}
	put("a1", "m1") // 1
	put("a2", "m2") // 2
	put("a3", "m3") // 3
	put("a2", "m4") // 4, supersedes 2
	require.Equal(t, []string{"a1=m1", "a3=m3", "a2=m4"}, walk(4, 0), "pinned at the head")
	put("a3", "m5") // 5, supersedes 3
	put("a2", "m6") // 6, supersedes 4
	require.Equal(t, []string{"a1=m1", "a3=m3", "a2=m4"}, walk(4, 0), "pinned before two updates")
	require.Equal(t, []string{"a3=m3", "a2=m4"}, walk(4, 1))
	require.Equal(t, []string{"a2=m4"}, walk(4, 3))
	require.Empty(t, walk(4, 4), "a range (4, 4] is empty, although 4 was superseded after the pin")
	require.Empty(t, walk(3, 3), "a range (3, 3] is empty, although 3 was superseded after the pin")
	require.Equal(t, []string{"a1=m1", "a3=m5", "a2=m6"}, walk(6, 0), "pinned at the head again")
}

// A walk whose pages end by bytes returns every record once, as it
// stood at the walk's pin, while records are updated and deleted between
// its pages (so later pages read versions as of the pin from history,
// the branch the statement does not bound by bytes); each page holds
// less than the bound before its last record.
func TestWalkCutByBytes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 49))
	n := 0
	put := func(record string, deleted bool) string {
		n++
		mutation := fmt.Sprintf("m%d", n)
		m := store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: record},
			MutationID: mutation, Deleted: deleted, CapturedAt: 7, PayloadVersion: 1}
		if !deleted {
			m.Data = []byte(fmt.Sprintf(`{"name":%q}`, strings.Repeat("x", 50+rng.IntN(3000))))
		}
		d := sha256.Sum256([]byte(mutation))
		m.RequestSHA256 = d[:]
		_, _, err := st.RecordIngest(ctx, m, 11)
		require.NoError(t, err)
		return mutation
	}
	const records = 40
	asOfPin := map[string]string{} // record id: its mutation id at the pin
	for i := range records {
		id := fmt.Sprintf("a%02d", i)
		asOfPin[id] = put(id, false)
	}
	const budget = 6000
	seen := map[string]int{}
	var pos *store.WalkPos
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100)
		page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 7, MaxBytes: budget, Pos: pos})
		require.NoError(t, err)
		var before int
		for k, e := range page.Records {
			seen[e.ID]++
			require.Equal(t, asOfPin[e.ID], e.MutationID, "record %s as of the pin", e.ID)
			if k < len(page.Records)-1 {
				before += len(e.Data) + pgrows.RowOverhead
			}
		}
		require.Less(t, before, budget, "what comes before a page's last record is under the bound")
		if page.Next == nil {
			break
		}
		require.NotEmpty(t, page.Records)
		pos = page.Next
		// Between pages: a few records change or go, some already
		// returned and some not.
		for range 3 {
			id := fmt.Sprintf("a%02d", rng.IntN(records))
			put(id, rng.IntN(4) == 0)
		}
	}
	require.Len(t, seen, records)
	for id, c := range seen {
		require.Equal(t, 1, c, "record %s", id)
	}
}

// A walk page whose current versions are cut by bytes is sent no
// versions as of its pin beyond the rows of them it sent: after a first
// page of records of 400 kB, the last ten records change, and the next
// page of 1 MiB (three records) is sent four rows, not also the ten
// versions as of the pin that lie beyond them (they would be cut from the
// page anyway). The walk still returns every record once, as of its pin.
// (A page whose current versions are not cut, the versions as of the pin
// following them, is still sent those up to the page's rows: they are
// bounded by rows, not bytes.)
func TestRecordWalkPageSendsNoVersionsBeyondItsBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, counter := openCountedStore(t)
	const size = 400_000
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1')`)
	require.NoError(t, err)
	n := 0
	put := func(id string) string {
		n++
		m := fmt.Sprintf("m%03d", n)
		d := sha256.Sum256([]byte(m))
		data := fmt.Sprintf(`{"name":%q,"isDeleted":false}`, strings.Repeat(m[len(m)-1:], size-29))
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "users", RecordID: id},
			MutationID: m, Data: []byte(data), CapturedAt: 7, PayloadVersion: 1, RequestSHA256: d[:]}, 11)
		require.NoError(t, err)
		return m
	}
	asOfPin := map[string]string{}
	for i := range 20 {
		id := fmt.Sprintf("u%02d", i)
		asOfPin[id] = put(id)
	}
	seen := map[string]int{}
	var pos *store.WalkPos
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20)
		counter.take()
		counter.takeQueryRows()
		page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "users", Limit: 10, MaxBytes: 1 << 20, Pos: pos})
		require.NoError(t, err)
		sent := counter.takeQueryRows()
		for _, e := range page.Records {
			seen[e.ID]++
			require.Equal(t, asOfPin[e.ID], e.MutationID, "record %s as of the pin", e.ID)
		}
		t.Logf("page %d: %d rows sent, %d records returned", pages, sent, len(page.Records))
		if pages == 1 {
			require.LessOrEqual(t, sent, len(page.Records)+1, "page %d: rows sent, records returned and one", pages)
		}
		if pages == 0 {
			for i := 10; i < 20; i++ {
				put(fmt.Sprintf("u%02d", i))
			}
		}
		if page.Next == nil {
			break
		}
		pos = page.Next
	}
	require.Len(t, seen, 20)
	for id, c := range seen {
		require.Equal(t, 1, c, "record %s", id)
	}
}
