package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// chaosKills is how many times the database connections are cut: a short
// run in `make test`, a long one with `make chaos` (FOODSAFE_CHAOS_KILLS).
func chaosKills(t *testing.T) int {
	t.Helper()
	n := 15
	if v := os.Getenv("FOODSAFE_CHAOS_KILLS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "FOODSAFE_CHAOS_KILLS")
	}
	return n
}

// Losing the database connection in the middle of requests, over and over,
// under load of writers and readers, is only ever a 503 that clients retry:
// never a 500. Two ways to lose it: the server ends the sessions
// (pg_terminate_backend: the client reads an admin-shutdown error), and
// the network drops them (toxiproxy between service and PostgreSQL is
// stopped and started again: every connection is closed mid-flight, the
// client reads EOFs mid-message, and connects are refused meanwhile).
// Every cut ends every connection of the pool, so the service must open
// new ones before it answers again; every write acknowledged with 200 is
// stored, and every write refused with 503 succeeds when retried.
func TestConnectionLossIsNever500(t *testing.T) {
	t.Parallel()
	t.Run("terminate backends", func(t *testing.T) {
		t.Parallel()
		a := newApp(t)
		admin, err := pgx.Connect(context.Background(), a.cfg.DatabaseURL+"&application_name=chaos")
		require.NoError(t, err)
		defer admin.Close(context.Background())
		terminated := 0
		connectionChaos(t, a, func() {
			var n int
			require.NoError(t, admin.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
				FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'foodsafe'`).Scan(&n))
			terminated += n
		})
		t.Logf("%d backends terminated", terminated)
	})
	t.Run("drop connections", func(t *testing.T) {
		t.Parallel()
		proxy, dbURL := newDBProxy(t, testdb.URL(t))
		a := newApp(t, withDatabaseURL(dbURL))
		connectionChaos(t, a, func() {
			proxy.p.Stop()
			require.NoError(t, proxy.p.Start())
		})
	})
}

// connectionChaos runs writers and readers against a and calls cut over
// and over, each time after requests that started after the previous cut
// succeeded. After each cut it checks that the pool had to open new
// connections: a cut that ended none (a proxy or terminator that does
// nothing) fails the test.
func connectionChaos(t *testing.T, a *app, cut func()) {
	t.Helper()
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	a.put(key, "r1", "areas", "seed", "seed", area("Seed"))

	type outcome struct {
		status   int
		body     string
		mutation string
	}
	var (
		stop atomic.Bool
		// cuts counts the cuts so far; a request notes it when it starts.
		cuts atomic.Int64
		// progress receives, for each success, the cuts before its start.
		progress = make(chan int64, 1024)
		mu       sync.Mutex
		results  []outcome
		wg       sync.WaitGroup
	)
	record := func(o outcome, cutsAtStart int64) {
		mu.Lock()
		results = append(results, o)
		mu.Unlock()
		if o.status == http.StatusOK {
			select {
			case progress <- cutsAtStart:
			default:
			}
		}
	}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				m := fmt.Sprintf("w%d-%d", w, i)
				c := cuts.Load()
				r := a.ingest(key, "r1", "areas", m, m, snapshot("r1", m, m, 1, false, area(m)))
				record(outcome{r.Status, string(r.Body), m}, c)
			}
		}()
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c := cuts.Load()
				r := a.getAs(key, recordsPath("r1", "areas")+"?limit=20")
				record(outcome{r.Status, string(r.Body), ""}, c)
			}
		}()
	}
	// Workers stop before the test ends, also when an assertion below
	// ends it early: none may report to a finished test.
	stopWorkers := sync.OnceFunc(func() { stop.Store(true); wg.Wait() })
	defer stopWorkers()
	// recovered waits for five successes of requests that started after
	// the last cut (no timing involved).
	recovered := func() {
		for n := 0; n < 5; {
			if <-progress == cuts.Load() {
				n++
			}
		}
	}
	pool := a.svc.Store.Pool()
	kills := chaosKills(t)
	recovered()
	for k := 1; k <= kills; k++ {
		opened := pool.Stat().NewConnsCount()
		cut()
		cuts.Store(int64(k))
		recovered()
		require.Greater(t, pool.Stat().NewConnsCount(), opened,
			"cut %d: requests succeeded after it without a new connection, so it ended none", k)
	}
	stopWorkers()

	counts := map[int]int{}
	var refused []string
	for _, o := range results {
		counts[o.status]++
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, o.status, "body: %s", o.body)
		if o.status == http.StatusServiceUnavailable {
			require.Contains(t, o.body, "dependency-unavailable")
			if o.mutation != "" {
				refused = append(refused, o.mutation)
			}
		}
	}
	t.Logf("%s: %d connection cuts, %d connections opened: %v", t.Name(), kills, pool.Stat().NewConnsCount(), counts)
	require.Positive(t, counts[http.StatusServiceUnavailable], "requests met the cuts")
	require.NotContains(t, a.logs.String(), `"status":500`)

	// Nothing acknowledged was lost; everything refused goes through now,
	// retried as spec 7 asks: a connection the last cut killed answers one
	// more 503 before the pool drops it, so a client retries a few times.
	retry := func(f func() response) response {
		var r response
		for range 2 * a.svc.Store.PoolSize() {
			if r = f(); r.Status != http.StatusServiceUnavailable {
				break
			}
		}
		return r
	}
	for _, o := range results {
		if o.status == http.StatusOK && o.mutation != "" {
			r := retry(func() response { return a.getAs(key, recordsPath("r1", "areas")+"/"+o.mutation) })
			require.Equal(t, http.StatusOK, r.Status, o.mutation)
		}
	}
	for _, m := range refused {
		r := retry(func() response { return a.ingest(key, "r1", "areas", m, m, snapshot("r1", m, m, 1, false, area(m))) })
		require.Equal(t, http.StatusOK, r.Status, "retry of %s: %s", m, r.Body)
	}
}
