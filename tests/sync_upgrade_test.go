package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// previousRelease is the last commit whose foodsafe-sync made mirrors of
// schema version 1: sequences and heads as digit strings, no typed
// relations. Mirrors it made must keep working with every later release.
const previousRelease = "0534fc0d7d63a7f37f7c9bc021ae5f821e102ee5"

var previous struct {
	once sync.Once
	path string
	err  error
}

// previousSyncBinary builds cmd/foodsafe-sync as previousRelease had it,
// from this repository's history (git archive, then go build with the
// module cache the tests already use). A clone without that commit (a
// shallow one) cannot: the test fails in CI and skips elsewhere, saying
// so.
func previousSyncBinary(t *testing.T) string {
	t.Helper()
	if err := exec.Command("git", "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
		msg := "commit " + previousRelease[:12] + " (the previous release of foodsafe-sync) is not in this clone: git fetch --unshallow"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (CI runs this test; set CI to make this a failure)")
	}
	binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "foodsafe-cli-") })
	require.NoError(t, binDirErr)
	previous.once.Do(func() {
		src := filepath.Join(binDir, "previous-release")
		if previous.err = os.MkdirAll(src, 0o755); previous.err != nil {
			return
		}
		// From the repository's root: in a subdirectory, git archive
		// takes only that subdirectory.
		archive := exec.Command("git", "archive", "--format=tar", previousRelease)
		archive.Dir = ".."
		untar := exec.Command("tar", "-x", "-C", src)
		var archiveErr, untarErr bytes.Buffer // each written by its own command's goroutine
		archive.Stderr, untar.Stderr = &archiveErr, &untarErr
		if untar.Stdin, previous.err = archive.StdoutPipe(); previous.err != nil {
			return
		}
		if previous.err = untar.Start(); previous.err != nil {
			return
		}
		if previous.err = errors.Join(archive.Run(), untar.Wait()); previous.err != nil {
			previous.err = errors.New(previous.err.Error() + ": " + archiveErr.String() + untarErr.String())
			return
		}
		previous.path = filepath.Join(binDir, "foodsafe-sync-previous")
		build := exec.Command("go", "build", "-o", previous.path, "./cmd/foodsafe-sync")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			previous.err = errors.New(string(out))
		}
	})
	require.NoError(t, previous.err, "building the previous release's foodsafe-sync")
	return previous.path
}

// A mirror made by the previous release (sequences as text: ORDER BY
// sequence put 99 before 180) is upgraded in place by the next run:
// sequences and heads become numbers, the typed relations are built from
// the rows it holds, the run goes on from the kept cursors (what changed
// since, not everything again), and the mirror equals the server; in
// SQLite and PostgreSQL.
func TestSyncUpgradesPreviousRelease(t *testing.T) {
	t.Parallel()
	old := previousSyncBinary(t)
	s := newDemoServer(t)
	for i, tc := range []struct {
		name, target string
		mode         targets.TombstoneMode
		flag         string
	}{
		{"sqlite", sqliteTarget(t), targets.TombstoneMark, "mark"},
		{"postgres", testdb.EmptyURL(t), targets.TombstoneDelete, "delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--api", s.p.URL, "--to", tc.target, "--tombstones", tc.flag, "--json"}
			cmd := exec.Command(old, args...)
			cmd.Env = append(os.Environ(), "FOODSAFE_API_KEY="+s.readKey)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the previous release's sync:\n%s", out)

			db, _ := openTarget(t, tc.target)
			var top string
			require.NoError(t, db.QueryRow(`SELECT sequence FROM temperature_records ORDER BY sequence DESC LIMIT 1`).Scan(&top))
			require.Equal(t, "99", top, "the previous release's mirror sorts sequences as text")
			var version string
			require.NoError(t, db.QueryRow(`SELECT value FROM mirror_meta WHERE name = 'schema_version'`).Scan(&version))
			require.Equal(t, "1", version)

			// What changes before the upgrading run: new and updated
			// records, a deletion, a delivery.
			now := time.Now().UnixMilli()
			n := strconv.Itoa(i)
			for j := range 3 {
				id := "upgrade-" + n + "-" + strconv.Itoa(j)
				require.Equal(t, 200, s.a.ingest(s.writeKey, demo.RestaurantID, "areas", id, "m-"+id,
					snapshot(demo.RestaurantID, id, "m-"+id, now, false, area("Area "+id))).Status)
			}
			require.Equal(t, 200, s.a.ingest(s.writeKey, demo.RestaurantID, "areas", "upgrade-"+n+"-0", "m-del-"+n,
				snapshot(demo.RestaurantID, "upgrade-"+n+"-0", "m-del-"+n, now, true, nil)).Status)
			require.Equal(t, 200, s.a.putJSON(s.writeKey, "/v1/ingest/restaurants/"+demo.RestaurantID+"/deliveries/upgrade-"+n,
				deliveryJSON("upgrade-"+n, now-time.Hour.Milliseconds())).Status)

			res := runSync(t, s.readKey, args...)
			require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
			sum := res.summary(t)
			require.Zero(t, sum.Failed)
			require.LessOrEqual(t, sum.Records, int64(4), "the upgraded mirror goes on from its cursors: only what changed is walked")
			require.Equal(t, int64(1), sum.Deliveries)

			// A connection that prepared statements before the upgrade
			// would be told "cached plan must not change result type":
			// read on new ones.
			db, q := openTarget(t, tc.target)
			require.NoError(t, db.QueryRow(`SELECT value FROM mirror_meta WHERE name = 'schema_version'`).Scan(&version))
			require.Equal(t, "3", version, "upgraded through every version to this release's")
			var seq int64
			require.NoError(t, db.QueryRow(`SELECT sequence FROM temperature_records ORDER BY sequence DESC LIMIT 1`).Scan(&seq))
			require.Greater(t, seq, int64(99), "sequences sort as numbers once upgraded")
			types := `SELECT (SELECT typeof(sequence) FROM temperature_records LIMIT 1) || ' ' || (SELECT typeof(head) FROM stream_heads LIMIT 1)`
			want := "integer integer"
			if tc.name == "postgres" {
				types = `SELECT string_agg(data_type, ' ' ORDER BY table_name) FROM information_schema.columns
					WHERE table_schema = current_schema() AND ((table_name = 'temperature_records' AND column_name = 'sequence')
					OR (table_name = 'stream_heads' AND column_name = 'head'))`
				want = "bigint bigint"
			}
			var got string
			require.NoError(t, db.QueryRow(q(types)).Scan(&got))
			require.Equal(t, want, got)

			requireMirrorEqual(t, s.a, tc.target, demo.RestaurantID, tc.mode)
			requireTypedEqual(t, s.a, tc.target, demo.RestaurantID)

			st := s.a.cliSync("status", "--to", tc.target, "--json")
			require.Equal(t, 0, st.Code, st.Stderr)
			var status targets.Status
			require.NoError(t, json.Unmarshal([]byte(st.Stdout), &status))
			for _, ss := range status.Streams {
				require.True(t, ss.Incremental, ss.Stream)
				require.Empty(t, ss.LastError, ss.Stream)
			}
			require.False(t, strings.Contains(res.Stderr, "rebuild"), "no stream was rebuilt: %s", res.Stderr)
		})
	}
}
