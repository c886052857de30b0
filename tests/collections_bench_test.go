package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// seedHistorySQL builds one stream r1/areas of n records in which every
// tenth record was updated `updates` times: n + n/10*updates changes, with
// superseded_by chains as ingest would leave them; then ANALYZEs.
func seedHistorySQL(b testing.TB, dbURL string, n, updates int) {
	b.Helper()
	seedHistoryNoStatsSQL(b, dbURL, n, updates)
	analyze(b, dbURL)
}

// seedHistoryNoStatsSQL is seedHistorySQL without ANALYZE.
func seedHistoryNoStatsSQL(b testing.TB, dbURL string, n, updates int) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	defer conn.Close(ctx)
	m := n / 10
	execStatements(b, conn, []sqlStatement{
		{`INSERT INTO restaurants (id) VALUES ('r1')`, nil},
		// Base versions: sequence i; superseded by the first update when updated.
		{`INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                             captured_at, received_at, payload_version, request_sha256, superseded_by)
		  SELECT 'r1', 'areas', i, 'rec-' || i, 'base-' || i, false, jsonb_build_object('name', 'v0', 'isDeleted', false),
		         1700000000000, 1700000000000, 1, sha256(i::text::bytea),
		         CASE WHEN i % 10 = 0 AND $2::int > 0 THEN $1::bigint + i / 10 END
		  FROM generate_series(1, $1::int) i`, []any{n, updates}},
		// Update k of record 10j: sequence n + (k-1)*m + j.
		{`INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                             captured_at, received_at, payload_version, request_sha256, superseded_by)
		  SELECT 'r1', 'areas', $1::bigint + (k - 1) * $3::bigint + j, 'rec-' || (10 * j), 'upd-' || k || '-' || j, false,
		         jsonb_build_object('name', 'v' || k, 'isDeleted', false), 1700000000000, 1700000000000, 1,
		         sha256((k || '-' || j)::bytea),
		         CASE WHEN k < $2::int THEN $1::bigint + k * $3::bigint + j END
		  FROM generate_series(1, $2::int) k, generate_series(1, $3::int) j`, []any{n, updates, m}},
		{`INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
		                      captured_at, received_at, payload_version)
		  SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
		  FROM record_changes WHERE superseded_by IS NULL`, nil},
		{`INSERT INTO collection_streams (restaurant_id, collection, last_sequence, max_record_bytes)
		  SELECT 'r1', 'areas', max(sequence), max(octet_length(data::text)) FROM record_changes`, nil},
	})
}

// sqlStatement is one statement of a seed.
type sqlStatement struct {
	sql  string
	args []any
}

// execStatements runs a seed's statements in order on conn.
func execStatements(t testing.TB, conn *pgx.Conn, stmts []sqlStatement) {
	t.Helper()
	for _, st := range stmts {
		_, err := conn.Exec(context.Background(), st.sql, st.args...)
		require.NoError(t, err, st.sql)
	}
}

// BenchmarkRecordWalkPage: page latency at the start, middle and end of a
// 1,000,000-record collection where 10% of the records were updated 10
// times, and in the middle of a walk whose pin is 1,000 changes old.
func BenchmarkRecordWalkPage(b *testing.B) {
	const n, limit = 1_000_000, 50
	dbURL := testdb.URL(b)
	start := time.Now()
	seedHistorySQL(b, dbURL, n, 10)
	b.Logf("seeded %d records with %d changes in %s", n, n+n/10*10, time.Since(start).Round(time.Second))
	ctx := context.Background()
	st, err := store.Open(ctx, dbURL)
	require.NoError(b, err)
	b.Cleanup(st.Close)

	head, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit})
	require.NoError(b, err)
	pinned := head.Pinned
	at := func(depth int) *store.WalkPos {
		if depth == 0 {
			return nil
		}
		var after int64
		require.NoError(b, st.Pool().QueryRow(ctx, `SELECT sequence FROM records WHERE restaurant_id = 'r1' AND collection = 'areas'
			ORDER BY sequence OFFSET $1 LIMIT 1`, depth-1).Scan(&after))
		return &store.WalkPos{Pinned: pinned, After: after}
	}
	for _, c := range []struct {
		name  string
		depth int
	}{{"start", 0}, {"middle", n / 2}, {"end", n - limit}} {
		pos := at(c.depth)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: pos})
				if err != nil || len(page.Records) != limit {
					b.Fatalf("page: %d rows, %v", len(page.Records), err)
				}
			}
		})
	}

	// 1,000 records change after the pin: pages of the pinned walk also
	// read those records' versions as of the pin.
	pos := at(n / 2)
	for i := 1; i <= 1000; i++ {
		body := []byte(fmt.Sprintf(`{"name":"late-%d","isDeleted":false}`, i))
		d := sha256.Sum256(body)
		_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas",
			RecordID: fmt.Sprintf("rec-%d", i*997%n+1)}, MutationID: fmt.Sprintf("late-%d", i), Data: body,
			CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, 1)
		require.NoError(b, err)
	}
	b.Run("middle-1000-changes-since-pin", func(b *testing.B) {
		for b.Loop() {
			page, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: limit, Pos: pos})
			if err != nil || len(page.Records) != limit {
				b.Fatalf("page: %d rows, %v", len(page.Records), err)
			}
		}
	})
}

// BenchmarkIngest reports end-to-end ingest throughput (HTTP PUT to
// commit) with 8 concurrent writers, into one stream (every writer takes
// the same stream lock) and spread over 8 collections.
func BenchmarkIngest(b *testing.B) {
	for _, streams := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=8/streams=%d", streams), func(b *testing.B) {
			a := newApp(b)
			a.addRestaurants("r1")
			var scopes []string
			for _, c := range catalog.Collections {
				scopes = append(scopes, c.WriteScope())
			}
			key := a.newKey(grant("r1", scopes...))
			cols := []string{"areas", "products", "equipment", "users", "suppliers", "preparations", "cleaning-tasks", "sensors"}
			data := map[string]map[string]any{
				"areas": area("x"), "products": area("x"), "suppliers": area("x"),
				"equipment":      {"index": 1, "type": "FRIDGE", "name": "x", "isDeleted": false},
				"users":          {"lastName": "x", "firstName": "y", "email": "z"},
				"preparations":   {"name": "x", "lifespan": 3, "isDeleted": false},
				"cleaning-tasks": {"index": 1, "name": "x", "recurrence": 1, "isDeleted": false},
				"sensors":        {},
			}
			var seq atomic.Int64
			b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 writers
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := seq.Add(1)
					col := cols[int(i)%streams]
					id, mut := fmt.Sprintf("rec-%d", i%5000), fmt.Sprintf("m-%d", i)
					r := a.ingest(key, "r1", col, id, mut, snapshot("r1", id, mut, 1, false, data[col]))
					if r.Status != http.StatusOK {
						b.Errorf("ingest: %d %s", r.Status, r.Body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "mutations/s")
		})
	}
}

// BenchmarkWalkPageHandler: one walk page through the whole HTTP stack
// (in process, no network: router, authentication, rate limiter, audit,
// query, JSON), with -benchmem, at limit 10 and 100 on 1,000 records.
// Memory per request should grow with the page (the records themselves)
// and nothing else: compare B/op and allocs/op between the two limits.
func BenchmarkWalkPageHandler(b *testing.B) {
	a := newApp(b)
	seedRecordsSQL(b, a.cfg.DatabaseURL, "r1", "areas", 1000)
	key := a.newKey(grant("r1", "areas:read"))
	for _, limit := range []int{10, 100} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/v1/restaurants/r1/collections/areas/records?limit=%d", limit), nil)
			req.Header.Set("Authorization", "Bearer "+key)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				a.svc.Engine.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
