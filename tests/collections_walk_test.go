package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// walkStep fetches one page of a walk.
func (a *app) walkStep(key, restaurant, collection string, limit int, cursor string) walkPage {
	a.t.Helper()
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	r := a.getAs(key, recordsPath(restaurant, collection)+"?"+q.Encode())
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var p walkPage
	r.JSON(a.t, &p)
	return p
}

// walkAll runs a whole walk, checking sequence order and no empty pages.
func (a *app) walkAll(key, restaurant, collection string, limit int) []envelopeDoc {
	a.t.Helper()
	out, _ := a.walkFrom(key, restaurant, collection, limit, "")
	return out
}

// walkFrom runs a walk to its end, from cursor (empty: a full walk; a
// changesCursor: a changes walk), and returns its records and the
// changesCursor of its last page. It checks the page shape on the way:
// sequence ascending, no empty page before the end, changesCursor null on
// every page but the last, where it is a token.
func (a *app) walkFrom(key, restaurant, collection string, limit int, cursor string) ([]envelopeDoc, string) {
	a.t.Helper()
	var out []envelopeDoc
	for {
		p := a.walkStep(key, restaurant, collection, limit, cursor)
		out = append(out, p.Data...)
		if p.NextCursor == nil {
			require.NotNil(a.t, p.ChangesCursor, "the last page carries a changesCursor")
			require.NotEmpty(a.t, *p.ChangesCursor)
			for i := 1; i < len(out); i++ {
				require.Less(a.t, out[i-1].seq(a.t), out[i].seq(a.t), "sequence ascending")
			}
			return out, *p.ChangesCursor
		}
		require.Nil(a.t, p.ChangesCursor, "only the last page carries a changesCursor")
		require.NotEmpty(a.t, p.Data, "no empty page before the end")
		cursor = *p.NextCursor
	}
}

func names(t testing.TB, es []envelopeDoc) []string {
	var out []string
	for _, e := range es {
		if e.Deleted {
			out = append(out, e.ID+":deleted")
			continue
		}
		var d struct{ Name string }
		require.NoError(t, json.Unmarshal(e.Data, &d))
		out = append(out, e.ID+":"+d.Name)
	}
	return out
}

// A walk answers as of its first page: a record updated or deleted during
// the walk appears once, as it stood; one created during the walk does not
// appear; the next walk shows the new states.
func TestWalkIsASnapshot(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		a.put(key, "r1", "areas", id, fmt.Sprintf("m-%s-1", id), area(id+"1"))
	}
	first := a.walkStep(key, "r1", "areas", 2, "")
	require.Equal(t, []string{"a:a1", "b:b1"}, names(t, first.Data))

	a.put(key, "r1", "areas", "a", "m-a-2", area("a2"))                                    // already returned
	a.put(key, "r1", "areas", "c", "m-c-2", area("c2"))                                    // not yet returned
	a.put(key, "r1", "areas", "c", "m-c-3", area("c3"))                                    // twice
	a.ingest(key, "r1", "areas", "d", "m-d-2", snapshot("r1", "d", "m-d-2", 1, true, nil)) // deleted
	a.put(key, "r1", "areas", "f", "m-f-1", area("f1"))                                    // created
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "areas", "e", "m-e-2", snapshot("r1", "e", "m-e-2", 1, true, nil)).Status)

	second := a.walkStep(key, "r1", "areas", 2, *first.NextCursor)
	require.Equal(t, []string{"c:c1", "d:d1"}, names(t, second.Data))
	require.Equal(t, "3", second.Data[0].Sequence, "returned as it stood: its sequence at the pin")
	third := a.walkStep(key, "r1", "areas", 2, *second.NextCursor)
	require.Equal(t, []string{"e:e1"}, names(t, third.Data))
	require.Nil(t, third.NextCursor)

	// The next walk sees the new states, tombstones included.
	require.Equal(t, []string{"b:b1", "a:a2", "c:c3", "d:deleted", "f:f1", "e:deleted"}, names(t, a.walkAll(key, "r1", "areas", 2)))
}

func TestWalkPagination(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "users:read"))
	for _, col := range []string{"areas", "users"} {
		empty := a.walkStep(key, "r1", col, 0, "")
		require.Empty(t, empty.Data, "empty stream")
		require.NotNil(t, empty.Data, "data is [] (not null)")
		require.Nil(t, empty.NextCursor)
		require.NotNil(t, empty.ChangesCursor, "an empty walk is complete: it has a changesCursor")
	}
	for i := 0; i < 14; i++ {
		a.put(key, "r1", "areas", fmt.Sprintf("a%02d", i), fmt.Sprintf("m%02d", i), area("x"))
	}
	p1 := a.walkStep(key, "r1", "areas", 7, "")
	require.Len(t, p1.Data, 7)
	require.NotNil(t, p1.NextCursor)
	p2 := a.walkStep(key, "r1", "areas", 7, *p1.NextCursor)
	require.Len(t, p2.Data, 7)
	require.Nil(t, p2.NextCursor, "an exactly full last page ends the walk")

	for i := 14; i < 60; i++ {
		a.put(key, "r1", "areas", fmt.Sprintf("a%02d", i), fmt.Sprintf("m%02d", i), area("x"))
	}
	p := a.walkStep(key, "r1", "areas", 0, "")
	require.Len(t, p.Data, 50, "default limit")
	require.Len(t, a.walkAll(key, "r1", "areas", 100), 60)
	require.Len(t, a.walkAll(key, "r1", "areas", 1), 60)

	for _, bad := range []string{"0", "101", "abc", "-5", "07", ""} {
		p := requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit="+bad), http.StatusBadRequest, "invalid-request")
		require.Equal(t, "limit", p.Errors[0].Parameter)
	}
}

// A cursor continues only its own walk, and only for its lifetime; every
// refusal tells the client to start a new walk.
func TestWalkCursorRules(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := newApp(t, withClock(clock))
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:read", "deliveries:read"), grant("r2", "areas:read"))
	for i := 0; i < 5; i++ {
		a.put(key, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area("x"))
	}
	cur := *a.walkStep(key, "r1", "areas", 2, "").NextCursor

	check := func(name, path string) {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, a.getAs(key, path), http.StatusBadRequest, "invalid-request")
			require.Equal(t, "cursor", p.Errors[0].Parameter)
			require.Contains(t, p.Detail, "start a new walk")
		})
	}
	q := func(limit, c string) string { return "?limit=" + limit + "&cursor=" + url.QueryEscape(c) }
	check("other limit", recordsPath("r1", "areas")+q("3", cur))
	check("default limit", recordsPath("r1", "areas")+"?cursor="+cur)
	check("other collection", recordsPath("r1", "products")+q("2", cur))
	check("other restaurant", recordsPath("r2", "areas")+q("2", cur))
	check("tampered", recordsPath("r1", "areas")+q("2", flipChar(cur, len(cur)-5)))
	check("truncated", recordsPath("r1", "areas")+q("2", cur[:20]))
	check("garbage", recordsPath("r1", "areas")+q("2", "not-a-cursor"))
	check("empty", recordsPath("r1", "areas")+"?limit=2&cursor=")
	delivCur := *a.walkDeliveriesFirst(key)
	check("a delivery cursor", recordsPath("r1", "areas")+q("2", delivCur))

	// Valid for at least 24 hours...
	mu.Lock()
	now = now.Add(24*time.Hour - time.Second)
	mu.Unlock()
	require.Equal(t, http.StatusOK, a.getAs(key, recordsPath("r1", "areas")+q("2", cur)).Status)
	// ...and expired after.
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	p := requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+q("2", cur)), http.StatusBadRequest, "invalid-request")
	require.Contains(t, p.Detail, "expired")
	require.Contains(t, p.Detail, "start a new walk")
}

// walkDeliveriesFirst returns a genuine delivery cursor of restaurant r1.
func (a *app) walkDeliveriesFirst(key string) *string {
	a.t.Helper()
	for i := 0; i < 3; i++ {
		a.seedDelivery("r1", fmt.Sprintf("dc%d", i), int64(i))
	}
	var p deliveryPage
	a.getAs(key, deliveriesPath("r1", window(0, 10, 2))).JSON(a.t, &p)
	require.NotNil(a.t, p.NextCursor)
	return p.NextCursor
}

// seedRecordsSQL writes n records restaurant/collection/rec-0000001...
// straight in SQL, as ingest would have (sequence i, one change each), and
// ANALYZEs the tables.
func seedRecordsSQL(t testing.TB, dbURL, restaurant, collection string, n int) {
	t.Helper()
	seedRecordsNoStatsSQL(t, dbURL, restaurant, collection, n)
	analyze(t, dbURL)
}

// analyze gathers the planner's statistics of the collection tables.
func analyze(t testing.TB, dbURL string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `ANALYZE records; ANALYZE record_changes`)
	require.NoError(t, err)
}

// seedRecordsNoStatsSQL is seedRecordsSQL without ANALYZE: the planner
// then knows nothing of the tables but their size on disk.
func seedRecordsNoStatsSQL(t testing.TB, dbURL, restaurant, collection string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) VALUES ($1) ON CONFLICT DO NOTHING`, restaurant)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256)
		SELECT $1, $2, g, 'rec-' || lpad(g::text, 7, '0'), 'seed-' || g, false,
		       jsonb_build_object('name', 'seed-' || g, 'isDeleted', false), 1700000000000, 1700000000000, 1,
		       sha256(g::text::bytea)
		FROM generate_series(1, $3::int) g`, restaurant, collection, n)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `
		INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
		                     captured_at, received_at, payload_version)
		SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
		FROM record_changes WHERE restaurant_id = $1 AND collection = $2`, restaurant, collection)
	require.NoError(t, err)
	// The stream's row as ingest keeps it: its position and largest record.
	_, err = conn.Exec(ctx, `
		INSERT INTO collection_streams (restaurant_id, collection, last_sequence, max_record_bytes)
		SELECT $1, $2, $3, COALESCE(max(octet_length(data::text)), 0)
		FROM record_changes WHERE restaurant_id = $1 AND collection = $2
		ON CONFLICT (restaurant_id, collection)
		DO UPDATE SET last_sequence = excluded.last_sequence, max_record_bytes = excluded.max_record_bytes`, restaurant, collection, n)
	require.NoError(t, err)
}

// A 10,000-record walk with limit 7 while writers update, delete and
// create records: every record that existed at the pin comes back exactly
// once, in its state at the pin, and nothing created later appears.
func TestWalkUnderConcurrentIngest(t *testing.T) {
	t.Parallel()
	const n = 10_000
	dbURL := testdb.URL(t)
	seedRecordsSQL(t, dbURL, "r1", "areas", n)
	a := newApp(t, withDatabaseURL(dbURL))
	key := a.newKey(grant("r1", "areas:write", "areas:read"))

	first := a.walkStep(key, "r1", "areas", 7, "")
	require.NotNil(t, first.NextCursor)

	stop := make(chan struct{})
	// wrote carries a token after each write; the walk takes one before
	// each of its first pages, so writes interleave with the walk by
	// construction, not by how fast the writers happen to be.
	wrote := make(chan struct{}, 1)
	writersDone := make(chan struct{})
	var writes atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				target := fmt.Sprintf("rec-%07d", (i*997+w*3331)%n+1)
				mut := fmt.Sprintf("w%d-%d", w, i)
				var body map[string]any
				switch i % 3 {
				case 0: // update an existing record
					body = snapshot("r1", target, mut, 1, false, area("changed"))
				case 1: // delete an existing record
					body = snapshot("r1", target, mut, 1, true, nil)
				default: // create a new record
					target = fmt.Sprintf("new-%d-%d", w, i)
					body = snapshot("r1", target, mut, 1, false, area("new"))
				}
				r := a.ingest(key, "r1", "areas", target, mut, body)
				if r.Status != http.StatusOK {
					t.Errorf("ingest %s: %d %s", mut, r.Status, r.Body)
					return
				}
				writes.Add(1)
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
		}()
	}
	go func() { wg.Wait(); close(writersDone) }()

	got := append([]envelopeDoc{}, first.Data...)
	cursor := *first.NextCursor
	interleaved := 0
	for {
		if interleaved < 50 {
			select {
			case <-wrote:
				interleaved++
			case <-writersDone:
				t.Fatal("the writers stopped during the walk")
			}
		}
		p := a.walkStep(key, "r1", "areas", 7, cursor)
		got = append(got, p.Data...)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	close(stop)
	<-writersDone
	require.Equal(t, 50, interleaved, "50 pages were each preceded by a write made during the walk")
	require.GreaterOrEqual(t, writes.Load(), int64(interleaved))

	require.Len(t, got, n)
	seen := make(map[string]bool, n)
	for i, e := range got {
		want := fmt.Sprintf("rec-%07d", i+1)
		require.Equal(t, want, e.ID, "position %d", i)
		require.False(t, seen[e.ID])
		seen[e.ID] = true
		require.False(t, e.Deleted, "%s as it stood at the pin", e.ID)
		require.JSONEq(t, fmt.Sprintf(`{"name":"seed-%d","isDeleted":false}`, i+1), string(e.Data))
		require.Equal(t, strconv.Itoa(i+1), e.Sequence)
	}

	// The next walk sees what the writers did.
	after := a.walkAll(key, "r1", "areas", 100)
	require.Greater(t, len(after), n, "created records appear in the next walk")
}
