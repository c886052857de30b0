package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/maintain"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// BenchmarkCompaction builds one stream of FOODSAFE_COMPACT_BENCH_RECORDS
// records (default 1,000,000) with 10 versions each of about 450 bytes of
// data (a cleaning record with a note, say), all superseded long ago, ANALYZEs, then measures ingest (8 writers through the store) and
// walk pages (of 100) without compaction and while the compaction job
// runs, and reports the table's sizes before, after compaction and
// VACUUM (the space new writes reuse), and after VACUUM FULL (what a
// rewrite such as pg_repack returns to the file system).
func BenchmarkCompaction(b *testing.B) {
	n := 1_000_000
	if env := os.Getenv("FOODSAFE_COMPACT_BENCH_RECORDS"); env != "" {
		var err error
		n, err = strconv.Atoi(env)
		require.NoError(b, err, "FOODSAFE_COMPACT_BENCH_RECORDS")
	}
	const versions = 10
	ctx := context.Background()
	dbURL := testdb.URL(b)
	start := time.Now()
	seedVersionsSQL(b, dbURL, n, versions)
	b.Logf("seeded %d records x %d versions in %s", n, versions, time.Since(start).Round(time.Second))
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `ANALYZE`)
	require.NoError(b, err)
	sizes := func(when, unit string) {
		var heap, toast, indexes, total int64
		require.NoError(b, conn.QueryRow(ctx, `SELECT pg_relation_size('record_changes'),
			COALESCE(pg_total_relation_size(NULLIF(reltoastrelid, 0)), 0), pg_indexes_size('record_changes'),
			pg_total_relation_size('record_changes') FROM pg_class WHERE oid = 'record_changes'::regclass`).Scan(&heap, &toast, &indexes, &total))
		b.Logf("record_changes %-34s total %6d MiB (heap %6d, toast %4d, indexes %6d)", when+":", total>>20, heap>>20, toast>>20, indexes>>20)
		b.ReportMetric(float64(total>>20), "MiB-"+unit)
	}
	sizes("before", "before")

	st, err := store.Open(ctx, dbURL)
	require.NoError(b, err)
	defer st.Close()
	var mutations atomic.Int64
	// workload runs 8 writers (500 updates each) and one walker (300
	// pages of 100) at once and returns mutations/s and pages/s.
	workload := func(tag string) (float64, float64) {
		var wg sync.WaitGroup
		var ingestErr, walkErr atomic.Value
		t0 := time.Now()
		var ingestTook, walkTook time.Duration
		var mu sync.Mutex
		for w := range 8 {
			wg.Go(func() {
				for i := range 500 {
					k := mutations.Add(1)
					id := fmt.Sprintf("rec-%d", (k*7919)%int64(n)+1)
					body := []byte(fmt.Sprintf(`{"name":"%s-%d-%d","isDeleted":false}`, tag, w, i))
					d := sha256.Sum256(body)
					_, _, err := st.RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: "r1", Collection: "areas", RecordID: id},
						MutationID: fmt.Sprintf("bench-%d", k), Data: body, CapturedAt: 1, PayloadVersion: 1, RequestSHA256: d[:]}, time.Now().UnixMilli())
					if err != nil {
						ingestErr.Store(err)
						return
					}
				}
				mu.Lock()
				ingestTook = max(ingestTook, time.Since(t0))
				mu.Unlock()
			})
		}
		wg.Go(func() {
			var pos *store.WalkPos
			for range 300 {
				p, err := st.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: "r1", Collection: "areas", Limit: 100, Pos: pos})
				if err != nil {
					walkErr.Store(err)
					return
				}
				pos = p.Next
			}
			walkTook = time.Since(t0)
		})
		wg.Wait()
		if err, _ := ingestErr.Load().(error); err != nil {
			b.Fatal(err)
		}
		if err, _ := walkErr.Load().(error); err != nil {
			b.Fatal(err)
		}
		return 8 * 500 / ingestTook.Seconds(), 300 / walkTook.Seconds()
	}
	ingestQuiet, walkQuiet := workload("quiet")
	b.Logf("without compaction: ingest %.0f mutations/s, walk %.0f pages/s", ingestQuiet, walkQuiet)

	// The versions were superseded at received_at 1,700,000,000,000 ms:
	// long before the job's now.
	runner := maintain.New(st, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		maintain.Settings{CompactAfter: 25 * time.Hour}, 0, nil)
	done := make(chan error, 1)
	compactStart := time.Now()
	var compactTook time.Duration
	go func() {
		err := runner.RunOnce(ctx)
		compactTook = time.Since(compactStart)
		done <- err
	}()
	ingestBusy, walkBusy := workload("busy")
	require.NoError(b, <-done)
	var compacted int64
	require.NoError(b, conn.QueryRow(ctx, `SELECT count(*) FROM record_changes WHERE compacted_at IS NOT NULL`).Scan(&compacted))
	b.Logf("during compaction: ingest %.0f mutations/s (%.2f of quiet), walk %.0f pages/s (%.2f of quiet)",
		ingestBusy, ingestBusy/ingestQuiet, walkBusy, walkBusy/walkQuiet)
	b.Logf("compaction: %d versions in %s (%.0f versions/s)", compacted, compactTook.Round(time.Millisecond), float64(compacted)/compactTook.Seconds())
	require.GreaterOrEqual(b, compacted, int64(n*(versions-1)), "every version superseded long ago is compacted")
	b.ReportMetric(ingestQuiet, "ingest/s-quiet")
	b.ReportMetric(ingestBusy, "ingest/s-compacting")
	b.ReportMetric(walkQuiet, "pages/s-quiet")
	b.ReportMetric(walkBusy, "pages/s-compacting")
	b.ReportMetric(float64(compacted)/compactTook.Seconds(), "versions/s-compacted")

	_, err = conn.Exec(ctx, `VACUUM record_changes`)
	require.NoError(b, err)
	sizes("after compaction + VACUUM", "compacted")
	_, err = conn.Exec(ctx, `VACUUM FULL record_changes`)
	require.NoError(b, err)
	sizes("after VACUUM FULL", "rewritten")
}

// seedVersionsSQL builds stream r1/areas with n records of `versions`
// versions each (version k of record i has sequence (k-1)*n + i), every
// version but the last superseded at received_at, as ingest leaves them.
func seedVersionsSQL(b testing.TB, dbURL string, n, versions int) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	defer conn.Close(ctx)
	execStatements(b, conn, []sqlStatement{
		{`INSERT INTO restaurants (id) VALUES ('r1')`, nil},
		{`INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                             captured_at, received_at, payload_version, request_sha256, superseded_by, superseded_at)
		  SELECT 'r1', 'areas', (k - 1)::bigint * $1 + i, 'rec-' || i, 'm-' || k || '-' || i, false,
		         jsonb_build_object('name', 'version ' || k || ' of record ' || i, 'isDeleted', false,
		                            'notes', repeat(md5(k || '/' || i), 12)),
		         1700000000000, 1700000000000, 1, sha256((k || '-' || i)::bytea),
		         CASE WHEN k < $2 THEN k::bigint * $1 + i END,
		         CASE WHEN k < $2 THEN 1700000000000 END
		  FROM generate_series(1, $2::int) k, generate_series(1, $1::int) i`, []any{n, versions}},
		{`INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
		                      captured_at, received_at, payload_version)
		  SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
		  FROM record_changes WHERE superseded_by IS NULL`, nil},
		{`INSERT INTO collection_streams (restaurant_id, collection, last_sequence, max_record_bytes)
		  SELECT 'r1', 'areas', max(sequence), max(octet_length(data::text)) FROM record_changes`, nil},
	})
}

// BenchmarkAuditPartitionLayout compares the two layouts the audit
// retention could use over 400 days of events (1,000 a day): one partition
// per day (400 partitions, what migration 00009 does) and one per week (58),
// on what the service does with them: the COPY of a 500-event batch into
// today, and `foodsafe audit`'s query (the last 24 hours, newest 100),
// planned and executed each time as a one-off command does.
func BenchmarkAuditPartitionLayout(b *testing.B) {
	ctx := context.Background()
	dbURL := testdb.URL(b)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(b, err)
	defer conn.Close(ctx)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for _, layout := range []struct {
		name  string
		width int // days per partition
	}{{"day", 1}, {"week", 7}} {
		tbl := "audit_layout_" + layout.name
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE %[1]s (LIKE audit_events INCLUDING DEFAULTS) PARTITION BY RANGE (occurred_at);
			ALTER TABLE %[1]s ADD PRIMARY KEY (id, occurred_at);
			CREATE INDEX ON %[1]s (occurred_at DESC, id DESC)`, tbl))
		require.NoError(b, err)
		first := today.AddDate(0, 0, -400)
		for d := first; !d.After(today.AddDate(0, 0, 7)); d = d.AddDate(0, 0, layout.width) {
			_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE %[1]s_%[2]s PARTITION OF %[1]s FOR VALUES FROM ('%[3]s') TO ('%[4]s')`,
				tbl, d.Format("20060102"), d.Format(time.RFC3339), d.AddDate(0, 0, layout.width).Format(time.RFC3339)))
			require.NoError(b, err)
		}
		_, err = conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (occurred_at, method, route, status, request_id)
			SELECT $1::timestamptz + (g * interval '34560 milliseconds'), 'GET', '/v1/restaurants', 200, 'r' || g
			FROM generate_series(0, 399999) g`, tbl), first)
		require.NoError(b, err)
		_, err = conn.Exec(ctx, "ANALYZE "+tbl)
		require.NoError(b, err)
		var partitions int
		require.NoError(b, conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, tbl).Scan(&partitions))
		b.Logf("%s: %d partitions, 400,000 events", layout.name, partitions)

		b.Run(layout.name+"/audit-query", func(b *testing.B) {
			q := fmt.Sprintf(`SELECT id, occurred_at, route FROM %s WHERE occurred_at >= $1 ORDER BY occurred_at DESC, id DESC LIMIT 100`, tbl)
			for b.Loop() {
				// Simple protocol: planned on every call, like the CLI's
				// one query per process.
				rows, err := conn.Query(ctx, q, pgx.QueryExecModeSimpleProtocol, time.Now().Add(-24*time.Hour))
				require.NoError(b, err)
				rows.Close()
				require.NoError(b, rows.Err())
			}
		})
		b.Run(layout.name+"/copy-500", func(b *testing.B) {
			batch := make([][]any, 500)
			for i := range batch {
				batch[i] = []any{time.Now(), "GET", "/v1/restaurants", int16(200), "copy"}
			}
			for b.Loop() {
				_, err := conn.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"occurred_at", "method", "route", "status", "request_id"},
					pgx.CopyFromRows(batch))
				require.NoError(b, err)
			}
		})
	}
}
