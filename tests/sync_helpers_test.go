package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // reads SQLite mirrors

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/mirror"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

var syncCommand = &builtCommand{pkg: "../cmd/foodsafe-sync"}

// syncBinary is cmd/foodsafe-sync, as partners run it.
func syncBinary(t testing.TB) string { return syncCommand.binary(t) }

// syncEvent is one --json progress line.
type syncEvent struct {
	Event        string `json:"event"`
	Restaurant   string `json:"restaurant"`
	Stream       string `json:"stream"`
	Kind         string `json:"kind"`
	Pages        int64  `json:"pages"`
	Records      int64  `json:"records"`
	Done         bool   `json:"done"`
	StreamFailed bool   `json:"failed"`
	Reason       string `json:"reason"`
	mirror.Summary
}

// syncResult is a finished foodsafe-sync run.
type syncResult struct {
	Code           int
	Stdout, Stderr string
	Events         []syncEvent
}

// summary is the run's "done" event.
func (r syncResult) summary(t testing.TB) syncEvent {
	t.Helper()
	for _, e := range r.Events {
		if e.Event == "done" {
			return e
		}
	}
	require.Fail(t, "no done event", "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	return syncEvent{}
}

// pagesOf is the pages the run applied to one stream.
func (r syncResult) pagesOf(stream string) int64 {
	var n int64
	for _, e := range r.Events {
		if e.Event == "page" && e.Stream == stream {
			n = max(n, e.Pages)
		}
	}
	return n
}

// syncCmd is a foodsafe-sync command with the key in its environment.
func syncCmd(t testing.TB, key string, args ...string) *exec.Cmd {
	cmd := exec.Command(syncBinary(t), args...)
	cmd.Env = append(os.Environ(), "FOODSAFE_API_KEY="+key)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// runSync runs foodsafe-sync to its end.
func runSync(t testing.TB, key string, args ...string) syncResult {
	t.Helper()
	cmd := syncCmd(t, key, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := syncResult{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	case err != nil:
		require.NoError(t, err)
	}
	res.Events = parseEvents(t, res.Stdout)
	return res
}

func parseEvents(t testing.TB, stdout string) []syncEvent {
	var evs []syncEvent
	for _, line := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e syncEvent
		if json.Unmarshal([]byte(line), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs
}

// liveSync is a foodsafe-sync run in the background whose --json events
// the test reads as they come, to act at a chosen point of the run.
type liveSync struct {
	cmd    *exec.Cmd
	events chan syncEvent
	stdout bytes.Buffer
	stderr *logBuffer
	done   chan struct{}
}

func startSync(t testing.TB, key string, args ...string) *liveSync {
	t.Helper()
	cmd := syncCmd(t, key, append([]string{"--json"}, args...)...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	l := &liveSync{cmd: cmd, events: make(chan syncEvent, 100000), stderr: &logBuffer{}, done: make(chan struct{})}
	cmd.Stderr = l.stderr
	require.NoError(t, cmd.Start())
	go func() {
		defer close(l.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.stdout.WriteString(sc.Text() + "\n")
			var e syncEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				l.events <- e
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return l
}

// waitFor reads events until one satisfies f; it fails when the run ends
// first.
func (l *liveSync) waitFor(t testing.TB, what string, f func(syncEvent) bool) syncEvent {
	t.Helper()
	for e := range l.events {
		if f(e) {
			return e
		}
	}
	require.Fail(t, "foodsafe-sync ended before "+what, "stderr:\n%s", l.stderr.String())
	return syncEvent{}
}

// wait drains the events and waits for the process; it returns the run.
func (l *liveSync) wait(t testing.TB) syncResult {
	t.Helper()
	for range l.events { //nolint:revive // drain until the pipe closes
	}
	err := l.cmd.Wait()
	res := syncResult{Stdout: l.stdout.String(), Stderr: l.stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.Code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	res.Events = parseEvents(t, res.Stdout)
	return res
}

// signal sends sig to the running sync.
func (l *liveSync) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, l.cmd.Process.Signal(sig))
}

// demoServer is a `foodsafe serve` process over a fresh database holding
// the demo restaurant, with the demo's read key and a write key.
type demoServer struct {
	a        *app
	p        *serveProc
	env      []string
	readKey  string
	writeKey string
}

// newDemoServer loads the demo data and starts serve with env on top of
// the database, file directory and a fixed cursor key (so a restarted
// server honours the cursors of the previous one).
func newDemoServer(t testing.TB, env ...string) *demoServer {
	t.Helper()
	a := newApp(t)
	res := a.cli("demo")
	require.Equal(t, 0, res.Code, "demo: %s", res.Stderr)
	s := &demoServer{a: a, readKey: strings.TrimSpace(res.Stdout)}
	writes := []string{catalog.DeliveriesWrite, catalog.DeliveryImagesWrite}
	for _, c := range catalog.Collections {
		writes = append(writes, c.WriteScope())
	}
	s.writeKey = a.newKey(grant(demo.RestaurantID, writes...))
	s.env = append([]string{
		"DATABASE_URL=" + a.cfg.DatabaseURL,
		"FOODSAFE_BLOB_DIR=" + a.cfg.BlobDir,
		"FOODSAFE_CURSOR_KEY=" + rand.Text() + rand.Text(),
		"FOODSAFE_URL_KEY=" + rand.Text() + rand.Text(),
		// Budgets only the rate-limit test meets (it sets its own).
		"FOODSAFE_RATE_LIMIT=100000",
	}, env...)
	s.p = startServe(t, s.env...)
	return s
}

// restart stops the server and starts it again with extra env on top.
func (s *demoServer) restart(t testing.TB, env ...string) {
	t.Helper()
	s.p.stop(t)
	s.p = startServe(t, append(append([]string{}, s.env...), env...)...)
}

// sqliteTarget is a new SQLite mirror file.
func sqliteTarget(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "mirror.db") }

// openTarget opens a mirror for reading with database/sql.
func openTarget(t testing.TB, target string) (*sql.DB, func(string) string) {
	t.Helper()
	var db *sql.DB
	var err error
	rebind := func(q string) string { return q }
	if path, ok := strings.CutPrefix(target, "sqlite:"); ok {
		db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	} else {
		db, err = sql.Open("pgx", target)
		rebind = func(q string) string {
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", "$"+strconv.Itoa(i), 1)
			}
			return q
		}
	}
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db, rebind
}

// mirroredRecord is a record row, server side or mirror side.
type mirroredRecord struct {
	Sequence, MutationID   string
	Deleted                bool
	Data                   sql.NullString
	CapturedAt, ReceivedAt int64
	SourceVersion          sql.NullString
	PayloadVersion         int64
}

// requireMirrorEqual compares the mirror with the server's records and
// deliveries tables row by row, for every collection of the restaurant.
// In delete mode tombstoned records are absent from the mirror; in mark
// mode they are present with deleted = true (their last data kept). With
// only, just those collections are compared (and not the deliveries).
func requireMirrorEqual(t testing.TB, a *app, target, restaurant string, mode targets.TombstoneMode, only ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	db, q := openTarget(t, target)
	for _, c := range catalog.Collections {
		if len(only) > 0 && !slices.Contains(only, c.Name) {
			continue
		}
		server := map[string]mirroredRecord{}
		rows, err := conn.Query(ctx, `SELECT record_id, sequence::text, mutation_id, deleted, data::text, captured_at, received_at, source_version, payload_version
			FROM records WHERE restaurant_id = $1 AND collection = $2`, restaurant, c.Name)
		require.NoError(t, err)
		for rows.Next() {
			var id string
			var r mirroredRecord
			var data, sv *string
			require.NoError(t, rows.Scan(&id, &r.Sequence, &r.MutationID, &r.Deleted, &data, &r.CapturedAt, &r.ReceivedAt, &sv, &r.PayloadVersion))
			if data != nil {
				r.Data = sql.NullString{String: *data, Valid: true}
			}
			if sv != nil {
				r.SourceVersion = sql.NullString{String: *sv, Valid: true}
			}
			if r.Deleted && mode == targets.TombstoneDelete {
				continue
			}
			server[id] = r
		}
		require.NoError(t, rows.Err())
		got := map[string]mirroredRecord{}
		mrows, err := db.Query(q(`SELECT id, sequence, mutation_id, deleted, data, captured_at, received_at, source_version, payload_version
			FROM `+typed.TableName(c.Name)+` WHERE restaurant_id = ?`), restaurant)
		require.NoError(t, err, c.Name)
		for mrows.Next() {
			var id string
			var r mirroredRecord
			require.NoError(t, mrows.Scan(&id, &r.Sequence, &r.MutationID, &r.Deleted, &r.Data, &r.CapturedAt, &r.ReceivedAt, &r.SourceVersion, &r.PayloadVersion))
			got[id] = r
		}
		require.NoError(t, mrows.Err())
		mrows.Close()
		require.Equal(t, sortedKeys(server), sortedKeys(got), "%s: the mirror holds the server's record ids", c.Name)
		for id, want := range server {
			have := got[id]
			require.Equal(t, want.Sequence, have.Sequence, "%s/%s sequence", c.Name, id)
			require.Equal(t, want.MutationID, have.MutationID, "%s/%s mutationId", c.Name, id)
			require.Equal(t, want.Deleted, have.Deleted, "%s/%s deleted", c.Name, id)
			require.Equal(t, want.CapturedAt, have.CapturedAt, "%s/%s capturedAt", c.Name, id)
			require.Equal(t, want.ReceivedAt, have.ReceivedAt, "%s/%s receivedAt", c.Name, id)
			require.Equal(t, want.SourceVersion, have.SourceVersion, "%s/%s sourceVersion", c.Name, id)
			require.Equal(t, want.PayloadVersion, have.PayloadVersion, "%s/%s payloadVersion", c.Name, id)
			if !want.Deleted {
				require.True(t, have.Data.Valid, "%s/%s data", c.Name, id)
				require.Equal(t, decodeJSON(t, want.Data.String), decodeJSON(t, have.Data.String), "%s/%s data", c.Name, id)
			}
		}
	}
	if len(only) > 0 {
		return
	}
	type del struct {
		OccurredAt, ImageCount int64
		Supplier               string
	}
	server := map[string]del{}
	rows, err := conn.Query(ctx, `SELECT id, occurred_at, image_count, supplier_id FROM deliveries WHERE restaurant_id = $1`, restaurant)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var d del
		require.NoError(t, rows.Scan(&id, &d.OccurredAt, &d.ImageCount, &d.Supplier))
		server[id] = d
	}
	require.NoError(t, rows.Err())
	got := map[string]del{}
	mrows, err := db.Query(q(`SELECT id, occurred_at, image_count, supplier_id FROM deliveries WHERE restaurant_id = ?`), restaurant)
	require.NoError(t, err)
	defer mrows.Close()
	for mrows.Next() {
		var id string
		var d del
		require.NoError(t, mrows.Scan(&id, &d.OccurredAt, &d.ImageCount, &d.Supplier))
		got[id] = d
	}
	require.NoError(t, mrows.Err())
	require.Equal(t, server, got, "deliveries")
}

// requireFilesMirrored checks that the mirror holds exactly the digests of
// the server's live uploaded assets and delivery images, each on disk
// under its own SHA-256.
func requireFilesMirrored(t testing.TB, a *app, target, dir, restaurant string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var want []string
	rows, err := conn.Query(ctx, `SELECT DISTINCT sha256 FROM (
			SELECT data->'asset'->>'sha256' AS sha256 FROM records
			 WHERE restaurant_id = $1 AND NOT deleted AND data->'asset'->>'status' = 'uploaded'
			UNION SELECT sha256 FROM delivery_images WHERE restaurant_id = $1) d ORDER BY 1`, restaurant)
	require.NoError(t, err)
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		want = append(want, s)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, want)
	db, _ := openTarget(t, target)
	mrows, err := db.Query(`SELECT sha256, path FROM files ORDER BY sha256`)
	require.NoError(t, err)
	defer mrows.Close()
	var got []string
	for mrows.Next() {
		var sum, rel string
		require.NoError(t, mrows.Scan(&sum, &rel))
		got = append(got, sum)
		b, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		h := sha256.Sum256(b)
		require.Equal(t, sum, hex.EncodeToString(h[:]), "the file on disk is the bytes of its digest")
	}
	require.NoError(t, mrows.Err())
	require.Equal(t, want, got, "one file per digest the server holds")
}

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "JSON: %s", s)
	return v
}
