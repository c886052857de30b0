package tests

import (
	"crypto/rand"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/mirror/export"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// BenchmarkSync: foodsafe-sync mirroring a 100,000-record collection
// (FOODSAFE_SYNC_BENCH_RECORDS) from a `foodsafe serve` process into SQLite
// and into PostgreSQL: a first sync, a sync with nothing new, a sync
// after 1,000 records changed, the collection's typed relation rebuilt
// from the mirrored rows (what an upgrade does) and the Parquet export. The server's budget is lifted so the numbers
// are the client's and the server's speed; under the default 300 requests
// per minute the first sync's requests take requests/300 minutes.
func BenchmarkSync(b *testing.B) {
	n := 100_000
	if env := os.Getenv("FOODSAFE_SYNC_BENCH_RECORDS"); env != "" {
		var err error
		n, err = strconv.Atoi(env)
		require.NoError(b, err, "FOODSAFE_SYNC_BENCH_RECORDS")
	}
	const changed = 1000
	dbURL := testdb.URL(b)
	seedHistorySQL(b, dbURL, n, 0) // one stream r1/areas, ANALYZEd
	a := newApp(b, withDatabaseURL(dbURL))
	key := a.newKey(grant("r1", "areas:read", "areas:write"))
	p := startServe(b, "DATABASE_URL="+dbURL, "FOODSAFE_BLOB_DIR="+a.cfg.BlobDir, "FOODSAFE_RATE_LIMIT=1000000000",
		"FOODSAFE_CURSOR_KEY="+rand.Text()+rand.Text())
	for _, tg := range []struct{ name, target string }{{"sqlite", sqliteTarget(b)}, {"postgres", testdb.EmptyURL(b)}} {
		b.Run(tg.name, func(b *testing.B) {
			timed := func(what string) (syncEvent, time.Duration) {
				start := time.Now()
				r := runSync(b, key, "--api", p.URL, "--to", tg.target, "--json")
				took := time.Since(start)
				require.Equal(b, 0, r.Code, "stderr:\n%s", r.Stderr)
				s := r.summary(b)
				b.Logf("%-28s %8d requests %8d records %10s", what, s.Requests, s.Records, took.Round(time.Millisecond))
				return s, took
			}
			first, firstTook := timed("first sync")
			require.Equal(b, int64(n), first.Records)
			b.ReportMetric(firstTook.Seconds(), "first-s")
			b.ReportMetric(float64(first.Requests), "first-requests")
			b.ReportMetric(float64(n)/firstTook.Seconds(), "first-records/s")
			b.Logf("first sync under the default budget of 300 requests/minute: %.1f minutes", float64(first.Requests)/300)

			noop, noopTook := timed("nothing new")
			require.Zero(b, noop.Records)
			b.ReportMetric(float64(noopTook.Milliseconds()), "noop-ms")
			b.ReportMetric(float64(noop.Requests), "noop-requests")

			for i := 1; i <= changed; i++ {
				id := "rec-" + strconv.Itoa(i*(n/changed))
				a.put(key, "r1", "areas", id, "bench-"+tg.name+"-"+strconv.Itoa(i), area("changed "+strconv.Itoa(i)))
			}
			incr, incrTook := timed(strconv.Itoa(changed) + " records changed")
			require.Equal(b, int64(changed), incr.Records)
			b.ReportMetric(float64(incrTook.Milliseconds()), "incremental-ms")
			b.ReportMetric(float64(incr.Requests), "incremental-requests")

			// The typed relation rebuilt from the mirrored rows, as a
			// release whose relations differ does on opening the mirror
			// (an upgrade), then the whole mirror exported as Parquet.
			db, q := openTarget(b, tg.target)
			_, err := db.Exec(q(`UPDATE typed_relations SET definition = ?`), "another release")
			require.NoError(b, err)
			start := time.Now()
			r := runSync(b, "", "status", "--to", tg.target)
			rebuildTook := time.Since(start)
			require.Equal(b, 0, r.Code, "stderr:\n%s", r.Stderr)
			var typed int
			require.NoError(b, db.QueryRow(`SELECT count(*) FROM typed_areas`).Scan(&typed))
			require.Equal(b, n, typed)
			b.Logf("%-28s %10s", "typed relation rebuilt", rebuildTook.Round(time.Millisecond))
			b.ReportMetric(float64(rebuildTook.Milliseconds()), "rebuild-typed-ms")

			start = time.Now()
			r = runSync(b, "", "export", "--from", tg.target, "--out", b.TempDir(), "--json")
			exportTook := time.Since(start)
			require.Equal(b, 0, r.Code, "stderr:\n%s", r.Stderr)
			var files []export.File
			require.NoError(b, json.Unmarshal([]byte(r.Stdout), &files))
			for _, f := range files {
				if f.Relation == "typed_areas" {
					b.Logf("%-28s %10s  typed_areas: %d rows, %d bytes", "export as Parquet", exportTook.Round(time.Millisecond), f.Rows, f.Bytes)
				}
			}
			b.ReportMetric(float64(exportTook.Milliseconds()), "export-ms")
		})
	}
}
