package targets

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

func TestPlaceholders(t *testing.T) {
	q := `SELECT a FROM t WHERE x = ? AND y = ?`
	if got := (dialect{}).q(q); got != q {
		t.Errorf("sqlite keeps ?: %s", got)
	}
	if got, want := (dialect{postgres: true}).q(q), `SELECT a FROM t WHERE x = $1 AND y = $2`; got != want {
		t.Errorf("postgres: %s, want %s", got, want)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db": "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db":             "postgres://u@h/db",
		"postgres://h/db":               "postgres://h/db",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// applyPage applies recs to a fresh SQLite target's areas table.
func applyPage(t *testing.T, tg *Target, mode TombstoneMode, recs ...Record) {
	t.Helper()
	ctx := context.Background()
	if err := tg.EnsureCollection(ctx, "areas"); err != nil {
		t.Fatal(err)
	}
	if err := tg.Update(ctx, func(p *Page) error { return p.ApplyRecords(ctx, "r1", "areas", recs, mode, 0, false) }); err != nil {
		t.Fatal(err)
	}
}

func areaRows(t *testing.T, tg *Target) map[string]string {
	t.Helper()
	rows, err := tg.db.Query(`SELECT id, sequence || CASE WHEN deleted THEN '-deleted' ELSE '' END FROM areas`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	return out
}

func rec(id, seq string, deleted bool) Record {
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		panic(err)
	}
	r := Record{ID: id, Sequence: n, Deleted: deleted, MutationID: "m" + seq, PayloadVersion: 1}
	if !deleted {
		r.Data = []byte(`{"name":"` + id + seq + `","isDeleted":false}`)
	}
	return r
}

// A page naming a record twice keeps its latest state, in both modes and
// whether the latest is a tombstone or not; older states never win.
func TestApplyRecordsLatestWins(t *testing.T) {
	for _, mode := range []TombstoneMode{TombstoneMark, TombstoneDelete} {
		tg, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
		if err != nil {
			t.Fatal(err)
		}
		applyPage(t, tg, mode, rec("x", "3", false), rec("y", "3", false))
		applyPage(t, tg, mode, rec("x", "5", false), rec("x", "6", true), rec("y", "9", false), rec("y", "8", true), rec("z", "2", false))
		applyPage(t, tg, mode, rec("z", "1", false)) // older: ignored
		want := map[string]string{"x": "6-deleted", "y": "9", "z": "2"}
		if mode == TombstoneDelete {
			delete(want, "x")
		}
		if got := areaRows(t, tg); !reflect.DeepEqual(got, want) {
			t.Errorf("mode %d: %v, want %v", mode, got, want)
		}
		tg.Close()
	}
}

// Switching a target from marking tombstones to deleting them removes the
// rows already marked; switching back keeps them gone.
func TestTombstoneModeSwitch(t *testing.T) {
	ctx := context.Background()
	tg, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.SetTombstoneMode(ctx, TombstoneMark); err != nil {
		t.Fatal(err)
	}
	applyPage(t, tg, TombstoneMark, rec("x", "1", false), rec("y", "2", true))
	if err := putState(ctx, tg.db, tg.d, "r1", "areas", StreamState{ChangesCursor: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.SetTombstoneMode(ctx, TombstoneDelete); err != nil {
		t.Fatal(err)
	}
	if got := areaRows(t, tg); !reflect.DeepEqual(got, map[string]string{"x": "1"}) {
		t.Errorf("after switching to delete: %v", got)
	}
	if err := tg.SetTombstoneMode(ctx, TombstoneMark); err != nil {
		t.Fatal(err)
	}
	if got := areaRows(t, tg); !reflect.DeepEqual(got, map[string]string{"x": "1"}) {
		t.Errorf("after switching back: %v", got)
	}
}

// Every index of the typed layer has a name of its own within
// PostgreSQL's 63 bytes.
func TestTypedIndexNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range typed.Relations() {
		for _, ix := range r.Indexes {
			name := indexName(r.Name, ix)
			if len(name) > 63 || seen[name] {
				t.Errorf("index name %q: too long or not unique", name)
			}
			seen[name] = true
		}
	}
	if len(seen) == 0 {
		t.Fatal("no index in the typed layer")
	}
}

// SQLite holds a time as ISO-8601 text, PostgreSQL as the instant.
func TestTimeArgs(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 5, 0, 123e6, time.UTC)
	if got := (dialect{}).sqlArg(at); got != "2026-11-27T08:05:00.123Z" {
		t.Errorf("SQLite time %v", got)
	}
	if got := (dialect{postgres: true}).sqlArg(at); got != at {
		t.Errorf("PostgreSQL time %v", got)
	}
}

// Releasing a PostgreSQL target's lock frees it at once for another
// session, while the target's own connections are still open: the lock is
// a session's, and the connection that took it goes back to the pool
// rather than ending, so only an explicit unlock lets a run that starts
// right after this one's Close take the target (a run that found it still
// held would stop with "another foodsafe-sync holds it").
func TestReleasedLockIsFreeAtOnce(t *testing.T) {
	ctx := context.Background()
	url := testdb.EmptyURL(t)
	tg, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	try := func() bool {
		t.Helper()
		var ok bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext('foodsafe-sync'))`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if try() {
		t.Fatal("another session took the lock of an open target")
	}
	tg.unlock()
	if !try() {
		t.Fatal("the lock is still held after the target released it")
	}
}
