package tests

import (
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// waitBounded waits for the sync to end by itself; one still running
// after bound is killed and the test fails (a bound against hanging, not a
// measure: the run's own limits are what the tests assert).
func (l *liveSync) waitBounded(t testing.TB, bound time.Duration) syncResult {
	t.Helper()
	timer := time.AfterFunc(bound, func() { _ = l.cmd.Process.Kill() })
	defer timer.Stop()
	res := l.wait(t)
	require.NotEqual(t, -1, res.Code, "foodsafe-sync did not stop by itself within %s; stderr:\n%s", bound, res.Stderr)
	return res
}

// mirroredRows counts a stream's rows in the target.
func mirroredRows(t testing.TB, target, stream string) int64 {
	t.Helper()
	db, _ := openTarget(t, target)
	var n int64
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM `+typed.TableName(stream)).Scan(&n))
	return n
}

// A --once --files run whose server is killed mid-run (SIGKILL) stops at
// its deadline instead of retrying every remaining stream and file: exit
// 1, the reason on stderr, the pages applied before kept, the stream in
// flight marked with the reason in status.
func TestSyncOnceStopsAtItsDeadline(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	target, files := sqliteTarget(t), t.TempDir()
	// No failure limit: the deadline alone has to end the run.
	// Narrowed to the restaurant, the run walks stream by stream (a key-wide
	// first sync reads the feed instead: sync_feed_test.go).
	l := startSync(t, s.readKey, "--api", s.p.URL, "--to", target, "--files", "--files-dir", files,
		"--once", "--deadline", "15s", "--max-failures", "0", "--restaurant", demo.RestaurantID)
	first := l.waitFor(t, "a page applied", func(e syncEvent) bool { return e.Event == "page" && e.Records > 0 })
	// Freeze the sync so the server dies mid-run, whatever its pace.
	l.signal(t, syscall.SIGSTOP)
	require.NoError(t, s.p.cmd.Process.Kill())
	_ = s.p.cmd.Wait()
	l.signal(t, syscall.SIGCONT)

	res := l.waitBounded(t, 3*time.Minute)
	require.Equal(t, 1, res.Code, "stderr:\n%s", res.Stderr)
	require.Contains(t, res.Stderr, "foodsafe-sync: run stopped: its deadline of 15s passed (--deadline)")
	require.Contains(t, res.Stderr, "server unreachable; backing off", "what failed is logged")
	require.Contains(t, res.Stderr, "connection refused")
	sum := res.summary(t)
	// The stream in flight failed. Its retries back off with full jitter,
	// so they can run out before the deadline; the next stream then starts
	// and fails too, and only a stream that gave up can have come before
	// the one the deadline cut.
	require.GreaterOrEqual(t, sum.Failed, 1, "the stream in flight")
	if sum.Failed > 1 {
		require.Contains(t, res.Stderr, "gave up after 8 attempts", "a stream failed before the deadline only by running out of retries")
	}
	require.Less(t, sum.Streams, demoStreams)
	require.Zero(t, sum.Files)
	require.GreaterOrEqual(t, mirroredRows(t, target, first.Stream), first.Records, "the pages applied before stay")

	st := s.a.cliSync("status", "--to", target)
	require.Equal(t, 0, st.Code, st.Stderr)
	require.Contains(t, st.Stdout, "run stopped: its deadline of 15s passed", "status names the stream the deadline cut")
}

// A server that fails every request (500, retried once) ends a --once run
// after --max-failures requests in a row, across streams: exit 1 naming
// the failures; the stream mirrored before stays.
func TestSyncOnceStopsAfterFailuresInARow(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	var passed, injected atomic.Int64
	api := faultProxy(t, s.p.URL, func(w http.ResponseWriter, r *http.Request) bool {
		// The restaurant list, the listing of what changed and the first
		// stream's first page get through; everything after fails.
		if passed.Add(1) <= 3 {
			return false
		}
		injected.Add(1)
		writeProblem(w, r, http.StatusInternalServerError, "internal-error")
		return true
	})
	target := sqliteTarget(t)
	// Narrowed to the restaurant, the run walks stream by stream (a key-wide
	// first sync reads the feed instead: sync_feed_test.go).
	r := runSync(t, s.readKey, "--api", api, "--to", target, "--once", "--max-failures", "3", "--json", "--restaurant", demo.RestaurantID)
	require.Equal(t, 1, r.Code, "stderr:\n%s", r.Stderr)
	require.Contains(t, r.Stderr, "foodsafe-sync: run stopped: 3 requests in a row failed after their retries (--max-failures)")
	require.Contains(t, r.Stderr, ": 500 internal-error: injected (requestId sync-", "what failed, with its request id")
	require.Equal(t, int64(6), injected.Load(), "three requests, each tried twice, then the run stopped")
	var first syncEvent
	for _, e := range r.Events {
		if e.Event == "page" && e.Records > 0 {
			first = e
			break
		}
	}
	require.NotEmpty(t, first.Stream, "a page was applied before the failures")
	require.GreaterOrEqual(t, mirroredRows(t, target, first.Stream), first.Records, "the pages applied before stay")
	require.Less(t, r.summary(t).Streams, demoStreams, "the remaining streams were not tried")
}

// With --every, a round that meets its deadline (the server is down and
// --every retries it forever) is logged and the next round starts on
// schedule; once the server is back a round mirrors everything.
func TestSyncEveryCarriesOnAfterAFailedRound(t *testing.T) {
	t.Parallel()
	addr := freeLoopbackAddr(t)
	s := newDemoServer(t, "FOODSAFE_ADDR="+addr)
	s.p.stop(t)
	target := sqliteTarget(t)
	l := startSync(t, s.readKey, "--api", "http://"+addr, "--to", target, "--every", "1s", "--deadline", "5s")
	l.waitFor(t, "a round against the stopped server", func(e syncEvent) bool { return e.Event == "done" })
	s.p = startServe(t, s.env...)
	l.waitFor(t, "a round that mirrored", func(e syncEvent) bool { return e.Event == "done" && e.Pages > 0 && e.Failed == 0 })
	l.signal(t, syscall.SIGTERM)
	res := l.waitBounded(t, 3*time.Minute)
	require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
	require.Contains(t, res.Stderr, "sync run failed; trying again at the next interval")
	require.Contains(t, res.Stderr, "run stopped: its deadline of 5s passed")
	require.Contains(t, res.Stderr, "server unreachable; backing off")
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
}
