package mirror

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Positions are kept as numbers: any digit string within 64 bits, and
// nothing else.
func TestPosition(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1, "180": 180, "9223372036854775807": 9223372036854775807} {
		if got, err := position(in); err != nil || got != want {
			t.Errorf("position(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"9223372036854775808", "99999999999999999999", "-1", "+1", "", "1e3", " 1"} {
		if _, err := position(in); err == nil {
			t.Errorf("position(%q) accepted", in)
		}
	}
}

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

// Backoff stays within [atLeast, the attempt's capped ceiling].
func TestBackoffBounds(t *testing.T) {
	c := &Client{BackoffBase: 500 * time.Millisecond, BackoffCap: 30 * time.Second}
	for attempt := 1; attempt <= 12; attempt++ {
		ceiling := min(500*time.Millisecond<<(attempt-1), 30*time.Second)
		for range 200 {
			d := c.backoff(attempt, 0)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %s outside [0, %s]", attempt, d, ceiling)
			}
			if d := c.backoff(attempt, 45*time.Second); d != 45*time.Second {
				t.Fatalf("attempt %d: %s shorter than Retry-After 45s or longer", attempt, d)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	h := http.Header{}
	if got := retryAfter(h, time.Second); got != time.Second {
		t.Errorf("absent: %s", got)
	}
	h.Set("Retry-After", "7")
	if got := retryAfter(h, time.Second); got != 7*time.Second {
		t.Errorf("7: %s", got)
	}
	h.Set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT")
	if got := retryAfter(h, 2*time.Second); got != 2*time.Second {
		t.Errorf("a date is not understood; the default holds: %s", got)
	}
}

func TestNewClientRefusesCredentialsInURL(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, u := range []string{"ftp://h", "http://", "http://user:pw@h", "http://h/?x=1", "not a url"} {
		if _, err := NewClient(u, "k", log); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	if _, err := NewClient("https://api.example.com/", "k", log); err != nil {
		t.Errorf("a plain base URL: %v", err)
	}
}

// The terminal table redraws in place: it moves the cursor back over the
// lines it drew before, shows the streams under way, and the summary.
func TestTTYProgressRedraws(t *testing.T) {
	var b bytes.Buffer
	p := NewTTYProgress(&b)
	p.Plan(2)
	p.Stream(StreamEvent{Restaurant: "r1", Stream: "areas", Kind: "full", Pages: 1, Records: 100, BudgetRemaining: 299, BudgetLimit: 300})
	first := b.String()
	if !strings.Contains(first, "r1 areas") || !strings.Contains(first, "budget 299/300") || !strings.Contains(first, "streams 0/2") {
		t.Fatalf("first drawing: %q", first)
	}
	b.Reset()
	p.Stream(StreamEvent{Restaurant: "r1", Stream: "areas", Kind: "full", Pages: 2, Records: 150, Done: true})
	second := b.String()
	if !strings.HasPrefix(second, "\x1b[2A") {
		t.Errorf("the redraw starts by moving up over the two lines drawn: %q", second)
	}
	if strings.Contains(second, "r1 areas") || !strings.Contains(second, "streams 1/2") {
		t.Errorf("a finished stream leaves the table: %q", second)
	}
	b.Reset()
	p.Done(Summary{Streams: 2, Records: 150})
	if !strings.Contains(b.String(), "2 streams (0 failed)") {
		t.Errorf("summary: %q", b.String())
	}
}

// applyPage applies recs to a fresh SQLite target's areas table.
func applyPage(t *testing.T, tg *Target, mode TombstoneMode, recs ...Record) {
	t.Helper()
	ctx := context.Background()
	if err := tg.ensureCollectionTable(ctx, "areas"); err != nil {
		t.Fatal(err)
	}
	if err := tg.tx(ctx, func(tx *sql.Tx) error { return tg.applyRecords(ctx, tx, "r1", "areas", recs, mode, 0, false) }); err != nil {
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
	n, err := position(seq)
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
		tg, err := OpenTarget(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
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
	tg, err := OpenTarget(ctx, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.SetTombstoneMode(ctx, TombstoneMark); err != nil {
		t.Fatal(err)
	}
	applyPage(t, tg, TombstoneMark, rec("x", "1", false), rec("y", "2", true))
	if err := tg.putState(ctx, tg.db, "r1", "areas", StreamState{ChangesCursor: "c"}); err != nil {
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
