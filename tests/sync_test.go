package tests

import (
	"encoding/json"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/mirror"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// demoStreams is what the demo's read key mirrors: the 24 collections
// and the deliveries.
var demoStreams = len(catalog.Collections) + 1

// A first sync of the demo restaurant into SQLite and into PostgreSQL
// mirrors every record, tombstone, delivery and file exactly; a second
// sync costs one request per stream and changes nothing; status says so.
func TestSyncMirrorsEverything(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	for _, tc := range []struct {
		name, target string
		mode         targets.TombstoneMode
	}{
		{"sqlite, tombstones marked", sqliteTarget(t), targets.TombstoneMark},
		{"postgres, tombstones deleted", testdb.EmptyURL(t), targets.TombstoneDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := t.TempDir()
			args := []string{"--api", s.p.URL, "--to", tc.target, "--files", "--files-dir", files, "--json"}
			if tc.mode == targets.TombstoneDelete {
				args = append(args, "--tombstones", "delete")
			}
			first := runSync(t, s.readKey, args...)
			require.Equal(t, 0, first.Code, "stderr:\n%s", first.Stderr)
			sum := first.summary(t)
			require.Equal(t, demoStreams, sum.Streams)
			require.Zero(t, sum.Failed)
			require.Zero(t, sum.RateLimited)
			require.Positive(t, sum.Files)
			requireMirrorEqual(t, s.a, tc.target, demo.RestaurantID, tc.mode)
			requireFilesMirrored(t, s.a, tc.target, files, demo.RestaurantID)

			again := runSync(t, s.readKey, args...)
			require.Equal(t, 0, again.Code, "stderr:\n%s", again.Stderr)
			sum = again.summary(t)
			require.Equal(t, int64(2), sum.Requests, "an incremental sync with nothing new: the restaurant list and one listing of what changed")
			require.Zero(t, sum.Records)
			require.Zero(t, sum.Deliveries)
			require.Zero(t, sum.Files, "every digest is there already")
			requireMirrorEqual(t, s.a, tc.target, demo.RestaurantID, tc.mode)

			for _, out := range []string{first.Stdout, first.Stderr, again.Stdout, again.Stderr} {
				require.NotContains(t, out, secretOf(s.readKey), "the key's secret is never printed")
			}

			st := s.a.cliSync("status", "--to", tc.target, "--json")
			require.Equal(t, 0, st.Code, st.Stderr)
			var status targets.Status
			require.NoError(t, json.Unmarshal([]byte(st.Stdout), &status))
			require.Len(t, status.Streams, demoStreams)
			for _, ss := range status.Streams {
				require.True(t, ss.Incremental, "%s is incremental after a complete sync", ss.Stream)
				require.False(t, ss.InProgress, ss.Stream)
				require.NotNil(t, ss.LastSyncedAt, ss.Stream)
				require.Empty(t, ss.LastError, ss.Stream)
			}
			require.Equal(t, sum.Files+first.summary(t).Files, status.Files)
			text := s.a.cliSync("status", "--to", tc.target)
			require.Equal(t, 0, text.Code, text.Stderr)
			require.Contains(t, text.Stdout, "demo-bistro  temperature-records")
			require.Contains(t, text.Stdout, "incremental")
		})
	}
}

// cliSync runs foodsafe-sync without a key (status needs none).
func (a *app) cliSync(args ...string) syncResult {
	a.t.Helper()
	return runSync(a.t, "", args...)
}

// Repeated --once runs while the restaurant keeps writing (updates,
// creates, soft deletes, deletions, deliveries now and 3 hours late)
// converge: once the writes stop, one more run leaves the mirror, and its
// typed relations, equal to the server, in both tombstone modes.
func TestSyncConvergesUnderConcurrentIngest(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	targets := []struct {
		target string
		mode   targets.TombstoneMode
		args   []string
	}{
		{sqliteTarget(t), targets.TombstoneMark, nil},
		{testdb.EmptyURL(t), targets.TombstoneDelete, []string{"--tombstones", "delete"}},
	}
	sync := func(i int) syncResult {
		args := append([]string{"--api", s.p.URL, "--to", targets[i].target, "--json", "--overlap", "4h"}, targets[i].args...)
		r := runSync(t, s.readKey, args...)
		require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
		return r
	}
	sync(0)
	sync(1)

	stop, stopped := make(chan struct{}), make(chan struct{})
	progress := make(chan struct{}, 1024) // a token per write
	n := 0                                // the writes, read once stopped is closed
	go func() {
		// Writes go through the in-process server on the same database.
		// No require here: a failed write is reported with Errorf.
		defer close(stopped)
		now := time.Now()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := "area-live-" + strconv.Itoa(i%7)
			var r response
			switch i % 6 {
			case 5: // a reading whose corrective actions change in number
				tid := "temp-live-" + strconv.Itoa(i%4)
				actions := []any{}
				for k := range i % 3 {
					actions = append(actions, "action "+strconv.Itoa(k)+" of write "+strconv.Itoa(i))
				}
				r = s.a.ingest(s.writeKey, demo.RestaurantID, "temperature-records", tid, "m-live-"+strconv.Itoa(i),
					snapshot(demo.RestaurantID, tid, "m-live-"+strconv.Itoa(i), now.UnixMilli(), false, map[string]any{
						"timestamp": strconv.FormatInt(now.UnixMilli(), 10), "value": float64(i%9) - 1.5, "unit": "°C", "shift": "LIVE",
						"equipmentId": "equipment-1", "correctiveActions": actions}))
			case 0, 1: // create or update
				r = s.a.ingest(s.writeKey, demo.RestaurantID, "areas", id, "m-live-"+strconv.Itoa(i),
					snapshot(demo.RestaurantID, id, "m-live-"+strconv.Itoa(i), now.UnixMilli(), false, area("Area "+strconv.Itoa(i))))
			case 2: // soft delete
				r = s.a.ingest(s.writeKey, demo.RestaurantID, "areas", id, "m-live-"+strconv.Itoa(i),
					snapshot(demo.RestaurantID, id, "m-live-"+strconv.Itoa(i), now.UnixMilli(), false, map[string]any{"name": "retired", "isDeleted": true}))
			case 3: // delete (tombstone)
				r = s.a.ingest(s.writeKey, demo.RestaurantID, "areas", id, "m-live-"+strconv.Itoa(i),
					snapshot(demo.RestaurantID, id, "m-live-"+strconv.Itoa(i), now.UnixMilli(), true, nil))
			case 4: // a delivery now, and one checked 3 hours ago arriving late
				at := now.Add(-3 * time.Hour)
				if i/6%2 == 0 {
					at = now.Add(-time.Minute)
				}
				did := "late-" + strconv.Itoa(i)
				r = s.a.putJSON(s.writeKey, "/v1/ingest/restaurants/"+demo.RestaurantID+"/deliveries/"+did, deliveryJSON(did, at.UnixMilli()))
			}
			if r.Status != http.StatusOK {
				t.Errorf("write %d: %d %s", i, r.Status, r.Body)
				return
			}
			n++
			select {
			case progress <- struct{}{}:
			default: // far more writes than the rounds wait for
			}
		}
	}()
	// Each round waits for a round of every kind of write first: a sync
	// is faster than the writes, which would otherwise all come after
	// the last round.
	for round := 0; round < 3; round++ {
		for range 6 {
			select {
			case <-progress:
			case <-stopped: // a write failed (reported)
			}
		}
		sync(0)
		sync(1)
	}
	close(stop)
	<-stopped
	require.GreaterOrEqual(t, n, 18, "every kind of write came before each round")
	t.Logf("%d writes during the syncs", n)
	for i, tg := range targets {
		sync(i)
		requireMirrorEqual(t, s.a, tg.target, demo.RestaurantID, tg.mode)
		requireTypedEqual(t, s.a, tg.target, demo.RestaurantID) // the typed relations followed every page
	}
}

// A run killed with SIGKILL in the middle of a walk resumes from the last
// applied page (not from the start) and converges.
func TestSyncResumesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	const n = 1500
	s.a.seedAreas(s.writeKey, n)
	target := sqliteTarget(t)
	args := []string{"--api", s.p.URL, "--to", target, "--collections", "areas,temperature-records"}

	l := startSync(t, s.readKey, args...)
	l.waitFor(t, "page 4 of areas", func(e syncEvent) bool { return e.Stream == "areas" && e.Pages == 4 })
	l.signal(t, syscall.SIGKILL)
	killed := l.wait(t)
	require.Equal(t, -1, killed.Code, "killed by a signal")
	before := killed.pagesOf("areas")
	require.Less(t, before, int64(n/mirror.PageSize), "killed mid-walk")

	st := s.a.cliSync("status", "--to", target, "--json")
	require.Contains(t, st.Stdout, `"inProgress": true`, "the walk's cursor was kept with the pages applied")

	resumed := runSync(t, s.readKey, append(args, "--json")...)
	require.Equal(t, 0, resumed.Code, "stderr:\n%s", resumed.Stderr)
	total := int64(n/mirror.PageSize + 1)
	require.Less(t, resumed.pagesOf("areas"), total, "resumed after the applied pages, not from the start")
	require.GreaterOrEqual(t, before+resumed.pagesOf("areas"), total)
	requireCollectionsEqual(t, s, target, "areas", "temperature-records")
}

// requireCollectionsEqual compares a mirror of some collections only.
func requireCollectionsEqual(t testing.TB, s *demoServer, target string, collections ...string) {
	t.Helper()
	full := runSync(t, s.readKey, "--api", s.p.URL, "--to", target, "--json")
	require.Equal(t, 0, full.Code, "stderr:\n%s", full.Stderr)
	requireMirrorEqual(t, s.a, target, demo.RestaurantID, targets.TombstoneMark)
}

// seedAreas writes n area records through the API.
func (a *app) seedAreas(key string, n int) {
	a.t.Helper()
	for i := 0; i < n; i++ {
		id := "bulk-" + strconv.Itoa(i)
		a.put(key, demo.RestaurantID, "areas", id, "m-"+id, area("Bulk "+strconv.Itoa(i)))
	}
}
