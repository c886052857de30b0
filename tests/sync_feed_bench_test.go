package tests

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// BenchmarkSyncFirstOfLargeKey: foodsafe-sync's first sync of a key that reads
// 2,000 restaurants (FOODSAFE_FIRST_SYNC_BENCH_RESTAURANTS) x 24
// collections and their deliveries, one record or delivery in each of the
// 50,000 streams, into SQLite: the requests that reached the server
// (counted by a proxy in front of it), its time, and the minutes those
// requests take under the default budget of 300 a minute. The goal is at
// most 1,500 requests (a walk per stream cost 50,501). `make
// bench-first-sync` runs it; docs/performance.md has the figures.
func BenchmarkSyncFirstOfLargeKey(b *testing.B) {
	n := 2000
	if env := os.Getenv("FOODSAFE_FIRST_SYNC_BENCH_RESTAURANTS"); env != "" {
		var err error
		n, err = strconv.Atoi(env)
		require.NoError(b, err, "FOODSAFE_FIRST_SYNC_BENCH_RESTAURANTS")
	}
	a := newApp(b)
	restaurants := make([]string, n)
	for i := range restaurants {
		restaurants[i] = fmt.Sprintf("r%05d", i)
	}
	a.addRestaurants(restaurants...)
	start := time.Now()
	seedStreams(b, a, restaurants)
	b.Logf("seeded %d restaurants x %d streams in %s", n, len(catalog.Collections)+1, time.Since(start).Round(time.Second))
	key := a.newKey(feedGrants(restaurants, len(catalog.Collections), true)...)
	proxy := newCountingProxy(b, a.srv.URL)
	streams := n * (len(catalog.Collections) + 1)
	for b.Loop() {
		target := sqliteTarget(b)
		start := time.Now()
		r := runSync(b, key, "--api", proxy.URL, "--to", target, "--json", "--deadline", "0")
		took := time.Since(start)
		require.Equal(b, 0, r.Code, "stderr:\n%s", r.Stderr)
		requests, byPath, _ := proxy.take(b)
		sum := r.summary(b)
		require.Equal(b, int64(n*len(catalog.Collections)), sum.Records)
		require.Equal(b, int64(n), sum.Deliveries)
		require.Equal(b, streams, sum.Streams)
		b.Logf("first sync of %d streams (%d records, %d deliveries): %d requests at the server (%d of GET /v1/records), %s; under 300 requests/minute: %.1f minutes",
			streams, sum.Records, sum.Deliveries, requests, byPath["/v1/records"], took.Round(time.Millisecond), float64(requests)/300)
		b.ReportMetric(float64(requests), "requests")
		b.ReportMetric(took.Seconds(), "first-s")
		require.LessOrEqual(b, requests, 1500, "the issue's goal")
	}
}

// seedStreams writes one record in every collection and one delivery of
// each restaurant, through the store, four at a time.
func seedStreams(b *testing.B, a *app, restaurants []string) {
	b.Helper()
	st := a.store()
	now := time.Now()
	work := make(chan string)
	var mu sync.Mutex
	var first error
	seed := func(r string) error {
		for _, c := range catalog.Collections {
			if err := ingestDirect(st, r, c.Name, "rec-1", "m-"+r+"-"+c.Name, now); err != nil {
				return err
			}
		}
		return deliveryDirect(st, r, "d-1", now.Add(-time.Hour))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for r := range work {
				if err := seed(r); err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, r := range restaurants {
		work <- r
	}
	close(work)
	wg.Wait()
	require.NoError(b, first)
}
