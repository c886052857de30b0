package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// seedFeed writes data shaped like a large partner's production (the
// shape of the 20,000-restaurant key of issue reports): n restaurants
// p000000... with three collection streams each of 1 to 4 records, one
// stream in five with a head one above its records (a record written
// twice: heads count writes), and on every thousandth restaurant a stream
// of 2,000 records; records and stream positions as ingest leaves them
// (the change log is not read by a feed that nothing changed under). It
// returns the records written.
func (b *bench) seedFeed(ctx context.Context, n int) (int, error) {
	var collections []string
	for _, c := range catalog.Collections {
		collections = append(collections, c.Name)
	}
	if _, err := b.conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT 'p' || lpad(g::text, 6, '0') FROM generate_series(0, $1::int - 1) g`, n); err != nil {
		return 0, err
	}
	var records int
	err := b.conn.QueryRow(ctx, `
		WITH s AS (
			SELECT 'p' || lpad(g::text, 6, '0') AS r, ($2::text[])[1 + (g + j * 5) % cardinality($2::text[])] AS c,
			       CASE WHEN j = 0 AND g % 1000 = 7 THEN 2000 ELSE 1 + (g * 3 + j) % 4 END AS n,
			       ((g + j) % 5 = 0)::int AS extra
			FROM generate_series(0, $1::int - 1) g, generate_series(0, 2) j
		), streams AS (
			INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact)
			SELECT r, c, n + extra, pg_current_xact_id()::text::bigint FROM s
		), recs AS (
			INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
			                     captured_at, received_at, payload_version)
			SELECT s.r, s.c, 'rec-' || lpad(k::text, 4, '0'), k + s.extra, s.r || '-' || s.c || '-' || k, false,
			       json_build_object('name', 'record ' || k || ' of ' || s.c, 'isDeleted', false), 1700000000000, 1700000000000, 1
			FROM s, generate_series(1, s.n) k
			RETURNING 1
		)
		SELECT count(*) FROM recs`, n, collections).Scan(&records)
	return records, err
}

// feedRows seeds n production-shaped restaurants (seedFeed), creates a
// key reading them all and reads the whole records feed as a first sync
// does (GET /v1/records, limit 500), printing its pages, the records they
// carried and the p50, p90 and max of a page's time.
func (b *bench) feedRows(ctx context.Context, dir string, n int) error {
	start := time.Now()
	records, err := b.seedFeed(ctx, n)
	if err != nil {
		return err
	}
	if _, err := b.conn.Exec(ctx, "ANALYZE records; ANALYZE collection_streams"); err != nil {
		return err
	}
	seeded := time.Since(start)
	key, err := b.feedKey(ctx, dir, n)
	if err != nil {
		return err
	}
	// The key's first request (its lookup) is not the feed's cost.
	if _, _, err := b.get(ctx, key, "/v1/records?limit=1", ""); err != nil {
		return err
	}
	var took []time.Duration
	items := 0
	start = time.Now()
	for cursor := ""; ; {
		path := "/v1/records?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body, t, err := b.get(ctx, key, path, "")
		if err != nil {
			return err
		}
		took = append(took, t)
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		items += len(p.Data)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	total := time.Since(start)
	if items != records {
		return fmt.Errorf("the feed carried %d records of %d", items, records)
	}
	slices.Sort(took)
	fmt.Printf("feed of %d production-shaped restaurants (%d records, seeded in %s) | %d pages of limit 500 in %s | page p50 %s, p90 %s, max %s\n",
		n, records, seeded.Round(time.Millisecond), len(took), total.Round(time.Millisecond),
		ms(took[len(took)/2]), ms(took[len(took)*9/10]), ms(took[len(took)-1]))
	for _, to := range strings.Split(env("SYNC_TARGETS", "sqlite,postgres"), ",") {
		if err := b.firstSync(ctx, dir, key, n, to); err != nil {
			return fmt.Errorf("first sync into %s: %w", to, err)
		}
	}
	return nil
}

// firstSync runs SYNC_BIN (bin/foodsafe-sync) once over the feed's key
// into a new target of that kind (sqlite: a file; postgres: a database
// foodsafe_scale_mirror on DATABASE_URL's server), with the default
// deadline (5 minutes) and nothing else set, as a partner's first run
// is, and prints its exit status, time, requests, what it applied and,
// into PostgreSQL, the target's committed transactions
// (pg_stat_database.xact_commit once the run's connections are gone).
func (b *bench) firstSync(ctx context.Context, dir, key string, n int, kind string) error {
	var to, mirrorDB string
	switch kind {
	case "sqlite":
		to = "sqlite:" + filepath.Join(dir, "mirror.db")
	case "postgres":
		mirrorDB = env("SCALE_DB", "foodsafe_scale") + "_mirror"
		if _, err := b.conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{mirrorDB}.Sanitize()+" WITH (FORCE)"); err != nil {
			return err
		}
		u, err := url.Parse(b.dbURL)
		if err != nil {
			return err
		}
		u.Path = "/" + mirrorDB
		to = u.String()
	default:
		return fmt.Errorf("SYNC_TARGETS: %q is neither sqlite nor postgres", kind)
	}
	c := exec.CommandContext(ctx, env("SYNC_BIN", "bin/foodsafe-sync"), "--api", b.api, "--to", to, "--json")
	c.Env = append(os.Environ(), "FOODSAFE_API_KEY="+key)
	var stderr strings.Builder
	c.Stderr = &stderr
	start := time.Now()
	out, err := c.Output()
	took := time.Since(start)
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return err
	}
	var done struct {
		Event      string `json:"event"`
		Pages      int64  `json:"pages"`
		Records    int64  `json:"records"`
		Deliveries int64  `json:"deliveries"`
		Streams    int    `json:"streams"`
		Requests   int64  `json:"requests"`
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "done" {
			if err := json.Unmarshal(sc.Bytes(), &done); err != nil {
				return err
			}
		}
	}
	commits := ""
	if mirrorDB != "" {
		var x int64
		time.Sleep(time.Second) // the run's connections flush their counts as they end
		if err := b.conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, mirrorDB).Scan(&x); err != nil {
			return err
		}
		commits = fmt.Sprintf(", %d transactions of the target", x)
	}
	fmt.Printf("feed of %d production-shaped restaurants | first sync into %s, default deadline | exit %d in %s: %d requests, %d pages, %d records, %d streams%s\n",
		n, kind, code, took.Round(time.Second), done.Requests, done.Pages, done.Records, done.Streams, commits)
	if code != 0 {
		fmt.Printf("  its stderr ends: %s\n", lastLines(stderr.String(), 3))
	}
	return nil
}

// lastLines is the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// feedKey creates a key of the 25 read scopes on the n restaurants
// seedFeed wrote.
func (b *bench) feedKey(ctx context.Context, dir string, n int) (string, error) {
	path := filepath.Join(dir, "feed.grants")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	scopes := strings.Join(b.reads, ",")
	for i := range n {
		fmt.Fprintf(w, "p%06d=%s\n", i, scopes)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return "", err
	}
	out, err := b.cmd(ctx, nil, "keys", "create", "--name", "feed", "--grants-file", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("keys create: %w: %s", err, ee.Stderr)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
