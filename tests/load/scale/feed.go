package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
			INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact, max_record_bytes)
			SELECT r, c, n + extra, pg_current_xact_id()::text::bigint,
			       octet_length(json_build_object('name', 'record ' || n || ' of ' || c, 'isDeleted', false)::text) -- record n's, the largest
			FROM s
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
	targets := strings.Split(env("SYNC_TARGETS", "sqlite,postgres"), ",")
	for _, to := range targets {
		if err := b.firstSync(ctx, dir, key, n, to); err != nil {
			return fmt.Errorf("first sync into %s: %w", to, err)
		}
	}
	if slices.Contains(targets, "sqlite") {
		return b.refreshRows(ctx, dir, key, n)
	}
	return nil
}

// scattered is how many records refreshRows writes, one a restaurant.
const scattered = 2000

// refreshRows runs SYNC_BIN again into the SQLite mirror firstSync
// made: once with nothing changed (an idle refresh: its requests and the
// bytes of their answers), then after scattered records written through
// the API (PUT, one new record of areas on every n/2,000th restaurant)
// by a key that may write them (a catch-up: its requests, time, exit,
// and the minutes those requests take under the default budget of 300 a
// minute).
func (b *bench) refreshRows(ctx context.Context, dir, key string, n int) error {
	to := "sqlite:" + filepath.Join(dir, "mirror.db")
	code, took, done, stderr, err := b.sync(ctx, key, to)
	if err != nil {
		return err
	}
	fmt.Printf("feed of %d production-shaped restaurants | idle refresh into sqlite | exit %d in %s: %d requests, %d bytes of answers, %d records\n",
		n, code, took.Round(time.Millisecond), done.Requests, done.BodyBytes, done.Records)
	if code != 0 {
		fmt.Printf("  its stderr ends: %s\n", lastLines(stderr, 3))
	}
	step := max(1, n/scattered)
	path := filepath.Join(dir, "writer.grants")
	var grants strings.Builder
	for i := 0; i < n; i += step {
		fmt.Fprintf(&grants, "p%06d=areas:write\n", i)
	}
	if err := os.WriteFile(path, []byte(grants.String()), 0o600); err != nil {
		return err
	}
	out, err := b.cmd(ctx, nil, "keys", "create", "--name", "writer", "--grants-file", path).Output()
	if err != nil {
		return fmt.Errorf("keys create: %w", err)
	}
	writer := strings.TrimSpace(string(out))
	writes := 0
	start := time.Now()
	for i := 0; i < n && writes < scattered; i += step {
		r, m := fmt.Sprintf("p%06d", i), fmt.Sprintf("scatter-%06d", i)
		body := `{"id":"` + m + `","restaurantId":"` + r + `","mutationId":"` + m + `","payloadVersion":1,"capturedAt":"1700000000000",` +
			`"sourceVersion":null,"deleted":false,"data":{"name":"scattered ` + m + `","isDeleted":false}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, b.api+"/v1/ingest/restaurants/"+r+"/collections/areas/records/"+m+"/mutations/"+m, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+writer)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", m)
		res, err := b.http.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("PUT of %s of %s: %s", m, r, res.Status)
		}
		writes++
	}
	wrote := time.Since(start)
	code, took, done, stderr, err = b.sync(ctx, key, to)
	if err != nil {
		return err
	}
	fmt.Printf("feed of %d production-shaped restaurants | catch-up into sqlite after %d scattered writes (written in %s) | exit %d in %s: %d requests (%.1f minutes under 300 a minute), %d records, %d bytes of answers\n",
		n, writes, wrote.Round(time.Millisecond), code, took.Round(time.Millisecond), done.Requests, float64(done.Requests)/300, done.Records, done.BodyBytes)
	if code != 0 {
		fmt.Printf("  its stderr ends: %s\n", lastLines(stderr, 3))
	}
	return nil
}

// syncDone is what the bench reads of a run's done event.
type syncDone struct {
	Pages      int64 `json:"pages"`
	Records    int64 `json:"records"`
	Deliveries int64 `json:"deliveries"`
	Streams    int   `json:"streams"`
	Requests   int64 `json:"requests"`
	BodyBytes  int64 `json:"bodyBytes"`
}

// sync runs SYNC_BIN once with key into to, with the default deadline,
// and returns its exit status, time, done event and standard error.
func (b *bench) sync(ctx context.Context, key, to string) (int, time.Duration, syncDone, string, error) {
	var done syncDone
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
		return 0, 0, done, "", err
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event == "done" {
			if err := json.Unmarshal(sc.Bytes(), &done); err != nil {
				return 0, 0, done, "", err
			}
		}
	}
	return code, took, done, stderr.String(), nil
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
	code, took, done, stderr, err := b.sync(ctx, key, to)
	if err != nil {
		return err
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
		fmt.Printf("  its stderr ends: %s\n", lastLines(stderr, 3))
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
