// Command scale is `make bench-scale`: what a partner key costs by how
// much it holds, and what a walk page costs by how large its table is,
// measured against a real `foodsafe serve` over loopback.
//
// It creates the database SCALE_DB (default foodsafe_scale, dropped
// first) on DATABASE_URL's server, migrates it with BIN (bin/foodsafe), seeds the largest key's
// restaurants with one stream per read scope (25 each), creates one key per
// size in SIZES (default 200,2000,20000 restaurants x the 25 read scopes)
// with `keys create --grants-file`, starts `serve` without a rate limit and
// prints, per key, the rows of the scale table of docs/performance.md:
//
//   - create: `keys create --grants-file` of the key, wall time;
//   - first request: a one-record walk page, the key's first request on
//     the server (its grants loaded; the server warmed by another key's
//     requests first), then the same request again;
//   - full listing: every page of GET /v1/changes without a cursor
//     (limit 100), time and pages;
//   - poll: GET /v1/changes from the full listing's changesCursor with
//     nothing changed, POLLS times (p50 and max), right after every
//     stream of the key was written in one transaction before the listing
//     (its worst case) and again 2,048 transactions later (steady state);
//   - MCP: tools/list and walk_records (limit 100) of one restaurant on a
//     fresh MCP session (p50 and max of MCP_CALLS);
//   - restaurants: GET /v1/restaurants without Accept-Encoding, with gzip
//     and with zstd, bytes and time.
//
// For the largest key, under load: 1,000 one-record reads at about 100 a
// second while four other keys are created and revoked (p50, p99, max),
// and serve's peak resident set (VmHWM) after eight GET /v1/restaurants
// at once, without and with gzip.
//
// Then the records feed over data shaped like production (FEED_RESTAURANTS
// restaurants, default 20,000, of three collection streams of 1 to 4
// records, a few of 2,000): a first sync's pages (GET /v1/records, limit
// 500), their time in all and the p50, p90 and max of a page; then a
// first sync of that key by SYNC_BIN (bin/foodsafe-sync) into each of
// SYNC_TARGETS (sqlite,postgres), with the default deadline of 5 minutes:
// its exit status, time, requests and, into PostgreSQL, the target's
// transactions.
//
// Then the walk curve: for each size in WALK_SIZES (default
// 100000,1000000) a collection of that many records of a restaurant of
// its own, ANALYZEd, and the p50 of WALK_CALLS first pages and of as many
// second pages (pinned, by the first page's nextCursor), limit 100.
//
// The machine's other work moves every figure: it says nothing of
// p99 under load (make load does).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

// env returns the variable's value, or def when it is unset or empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ints parses a comma-separated list of integers; "none" is the empty
// list (SIZES=none WALK_SIZES=none: the feed's rows alone).
func ints(name, def string) ([]int, error) {
	var out []int
	if env(name, def) == "none" {
		return nil, nil
	}
	for _, f := range strings.Split(env(name, def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

type bench struct {
	bin     string
	dbURL   string
	conn    *pgx.Conn
	api     string
	http    *http.Client
	streams []string // the 25 streams a key reads on each restaurant
	reads   []string // the 25 read scopes
	// servePID is the serve process, whose peak resident set is read.
	servePID int
}

// settings are the benchmark's sizes and samples, from the environment.
type settings struct {
	sizes, walkSizes           []int
	polls, mcpCalls, walkCalls int
	// feedRestaurants sizes the production-shaped feed (FEED_RESTAURANTS,
	// default 20,000).
	feedRestaurants int
}

func readSettings() (settings, error) {
	var st settings
	lists := []struct {
		name, def string
		into      *[]int
	}{{"SIZES", "200,2000,20000", &st.sizes}, {"WALK_SIZES", "100000,1000000", &st.walkSizes}}
	for _, l := range lists {
		v, err := ints(l.name, l.def)
		if err != nil {
			return st, err
		}
		*l.into = v
	}
	counts := []struct {
		name, def string
		into      *int
	}{{"POLLS", "30", &st.polls}, {"MCP_CALLS", "10", &st.mcpCalls}, {"WALK_CALLS", "30", &st.walkCalls},
		{"FEED_RESTAURANTS", "20000", &st.feedRestaurants}}
	for _, c := range counts {
		v, err := ints(c.name, c.def)
		if err != nil {
			return st, err
		}
		if len(v) > 0 {
			*c.into = v[0]
		}
	}
	return st, nil
}

func run(ctx context.Context) error {
	st, err := readSettings()
	if err != nil {
		return err
	}
	sizes, walkSizes := st.sizes, st.walkSizes
	b := &bench{bin: env("BIN", "bin/foodsafe"), http: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			b.reads = append(b.reads, s)
		}
	}
	b.streams = []string{catalog.DeliveryStream}
	for _, c := range catalog.Collections {
		b.streams = append(b.streams, c.Name)
	}

	if err := b.database(ctx, env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")); err != nil {
		return err
	}
	defer b.conn.Close(ctx)
	maxSize := 0
	if len(sizes) > 0 {
		maxSize = slices.Max(sizes)
	}
	if err := b.seed(ctx, maxSize); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-scale")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	keys, err := b.createKeys(ctx, dir, sizes)
	if err != nil {
		return err
	}
	stop, err := b.serveWarm(ctx, dir)
	if err != nil {
		return err
	}
	defer stop()

	for _, n := range sizes {
		if err := b.keyRows(ctx, n, keys[n], st.polls, st.mcpCalls); err != nil {
			return fmt.Errorf("%d restaurants: %w", n, err)
		}
	}
	if maxSize > 0 {
		if err := b.largeKeyUnderLoad(ctx, dir, maxSize, keys[maxSize]); err != nil {
			return fmt.Errorf("%d restaurants under load: %w", maxSize, err)
		}
	}
	if st.feedRestaurants > 0 {
		if err := b.feedRows(ctx, dir, st.feedRestaurants); err != nil {
			return fmt.Errorf("feed of %d restaurants: %w", st.feedRestaurants, err)
		}
	}
	for _, n := range walkSizes {
		if err := b.walkCurve(ctx, dir, n, st.walkCalls); err != nil {
			return fmt.Errorf("walk of %d records: %w", n, err)
		}
	}
	return nil
}

// seed inserts n restaurants with one stream per read scope each, and a
// walk of 1,000 records on the first.
func (b *bench) seed(ctx context.Context, n int) error {
	start := time.Now()
	if _, err := b.conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT 'r' || lpad(g::text, 6, '0') FROM generate_series(0, $1::int - 1) g`, n); err != nil {
		return err
	}
	if _, err := b.conn.Exec(ctx, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact, max_record_bytes)
		SELECT 'r' || lpad(g::text, 6, '0'), s, 10, pg_current_xact_id()::text::bigint, 0
		FROM generate_series(0, $1::int - 1) g, unnest($2::text[]) s`, n, b.streams); err != nil {
		return err
	}
	if err := b.seedWalk(ctx, "r000000", "areas", 1000); err != nil {
		return err
	}
	fmt.Printf("seeded %d restaurants x %d streams in %s\n", n, len(b.streams), time.Since(start).Round(time.Millisecond))
	return nil
}

// createKeys creates a key of each size (printing how long each took),
// then ANALYZEs.
func (b *bench) createKeys(ctx context.Context, dir string, sizes []int) (map[int]string, error) {
	keys := map[int]string{}
	for _, n := range sizes {
		key, took, err := b.createKey(ctx, dir, fmt.Sprintf("scale-%d", n), n, "")
		if err != nil {
			return nil, err
		}
		keys[n] = key
		fmt.Printf("%d restaurants: keys create --grants-file (%d grants) %s\n", n, n*len(b.reads), took.Round(time.Millisecond))
	}
	_, err := b.conn.Exec(ctx, "ANALYZE")
	return keys, err
}

// serveWarm starts serve and warms it with a key of one restaurant (its
// pool, its prepared statements) before any key's first request is timed.
func (b *bench) serveWarm(ctx context.Context, dir string) (func(), error) {
	warm, _, err := b.createKey(ctx, dir, "warm-up", 0, "r000000")
	if err != nil {
		return nil, err
	}
	stop, err := b.serve(ctx, dir)
	if err != nil {
		return nil, err
	}
	for i := range 20 {
		_, took, err := b.get(ctx, warm, "/v1/restaurants/r000000/collections/areas/records?limit=1", "")
		if err == nil {
			_, _, err = b.get(ctx, warm, "/v1/changes?limit=100", "")
		}
		if err != nil {
			stop()
			return nil, err
		}
		if i == 0 {
			fmt.Printf("1 restaurant | first request of the key (a one-record walk page), the server's first | %s\n", ms(took))
		}
	}
	return stop, nil
}

// largeKeyUnderLoad prints the rows of the largest key under load: its
// reads while other keys are created and revoked (each change invalidates
// that key alone, so the polling key's reads must not wait on a lookup of
// its own grants), and serve's peak resident set while eight
// GET /v1/restaurants of the key are answered at once.
func (b *bench) largeKeyUnderLoad(ctx context.Context, dir string, n int, key string) error {
	row := func(what, format string, args ...any) {
		fmt.Printf("%d restaurants | %s | %s\n", n, what, fmt.Sprintf(format, args...))
	}
	// About 100 reads a second for 10 s, while a key of one restaurant is
	// created and revoked four times.
	const reads, every = 1000, 10 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		for i := range 4 {
			time.Sleep(2 * time.Second)
			other, _, err := b.createKey(ctx, dir, fmt.Sprintf("other-%d", i), 0, "r000001")
			if err != nil {
				done <- err
				return
			}
			public := strings.TrimPrefix(strings.SplitN(other, ".", 2)[0], "fsk_")
			if out, err := b.cmd(ctx, nil, "keys", "revoke", public).CombinedOutput(); err != nil {
				done <- fmt.Errorf("keys revoke: %w: %s", err, out)
				return
			}
		}
		done <- nil
	}()
	var samples []time.Duration
	tick := time.NewTicker(every)
	for range reads {
		<-tick.C
		_, took, err := b.get(ctx, key, "/v1/restaurants/r000000/collections/areas/records?limit=1", "")
		if err != nil {
			tick.Stop()
			return err
		}
		samples = append(samples, took)
	}
	tick.Stop()
	if err := <-done; err != nil {
		return err
	}
	slices.Sort(samples)
	row("1,000 reads at about 100 a second while four other keys are created and revoked", "p50 %s, p99 %s, max %s",
		ms(samples[len(samples)/2]), ms(samples[len(samples)*99/100]), ms(samples[len(samples)-1]))

	before, err := peakRSS(b.servePID)
	if err != nil {
		return err
	}
	for _, coding := range []string{"", "gzip"} {
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				_, _, err := b.get(ctx, key, "/v1/restaurants", coding)
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				return err
			}
		}
	}
	after, err := peakRSS(b.servePID)
	if err != nil {
		return err
	}
	row("8 GET /v1/restaurants at once, identity then gzip: serve's peak resident set", "%d MB (%d MB before)", after>>20, before>>20)
	return nil
}

// peakRSS is a process's high-water resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// advanceTransactions commits n empty transactions that each take a
// transaction id, as n writes of other tenants would.
func (b *bench) advanceTransactions(ctx context.Context, n int) error {
	for range n {
		if _, err := b.conn.Exec(ctx, "SELECT pg_catalog.txid_current()"); err != nil {
			return err
		}
	}
	return nil
}

// database creates foodsafe_scale on the server of base and migrates it.
// It connects to the server's maintenance database (postgres), not to
// the one base names, which need not exist (make's default DATABASE_URL
// names foodsafe, which only make run creates).
func (b *bench) database(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	u.Path = "/postgres"
	admin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	name := pgx.Identifier{env("SCALE_DB", "foodsafe_scale")}.Sanitize()
	if _, err := admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		return err
	}
	u.Path = "/" + env("SCALE_DB", "foodsafe_scale")
	b.dbURL = u.String()
	if out, err := b.cmd(ctx, nil, "migrate").CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %w: %s", err, out)
	}
	b.conn, err = pgx.Connect(ctx, b.dbURL)
	return err
}

// cmd is BIN with args on the bench's database.
func (b *bench) cmd(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, b.bin, args...)
	c.Env = append(append(os.Environ(), "DATABASE_URL="+b.dbURL, "FOODSAFE_LOG_LEVEL=warn"), extra...)
	return c
}

// createKey runs `keys create --grants-file` for the first n restaurants
// (or only restaurant `only`) with the 25 read scopes and returns the key.
func (b *bench) createKey(ctx context.Context, dir, name string, n int, only string) (string, time.Duration, error) {
	path := filepath.Join(dir, name+".grants")
	f, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	w := bufio.NewWriter(f)
	scopes := strings.Join(b.reads, ",")
	if only != "" {
		fmt.Fprintf(w, "%s=%s\n", only, scopes)
	}
	for i := range n {
		fmt.Fprintf(w, "r%06d=%s\n", i, scopes)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return "", 0, err
	}
	start := time.Now()
	out, err := b.cmd(ctx, nil, "keys", "create", "--name", name, "--grants-file", path).Output()
	took := time.Since(start)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", 0, fmt.Errorf("keys create: %w: %s", err, ee.Stderr)
		}
		return "", 0, err
	}
	return strings.TrimSpace(string(out)), took, nil
}

// serve starts `foodsafe serve` on a free loopback port, without a rate
// limit, and waits for /health/live.
func (b *bench) serve(ctx context.Context, dir string) (func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	c := b.cmd(ctx, []string{"FOODSAFE_ADDR=" + addr, "FOODSAFE_METRICS_ADDR=", "FOODSAFE_RATE_LIMIT=1000000000"}, "serve")
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		return nil, err
	}
	b.servePID = c.Process.Pid
	stop := func() {
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
		logf.Close()
	}
	b.api = "http://" + addr
	for range 200 {
		if res, err := http.Get(b.api + "/health/live"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	log, _ := os.ReadFile(logf.Name())
	return nil, fmt.Errorf("serve did not start: %s", log)
}

// get is one GET with the key; it returns the body and the time to read it.
func (b *bench) get(ctx context.Context, key, path, coding string) ([]byte, time.Duration, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, b.api+path, nil)
	if err != nil {
		return nil, 0, err
	}
	r.Header.Set("Authorization", "Bearer "+key)
	if coding != "" {
		r.Header.Set("Accept-Encoding", coding)
	}
	start := time.Now()
	res, err := b.http.Do(r)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	took := time.Since(start)
	if err != nil {
		return nil, 0, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
	}
	if coding != "" && res.Header.Get("Content-Encoding") != coding {
		return nil, 0, fmt.Errorf("GET %s with %s: answered %q", path, coding, res.Header.Get("Content-Encoding"))
	}
	return body, took, nil
}

// page is what the bench reads of a listing or walk page.
type page struct {
	Data          []json.RawMessage `json:"data"`
	NextCursor    *string           `json:"nextCursor"`
	ChangesCursor *string           `json:"changesCursor"`
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// stats is "p50 X ms, max Y ms" of samples.
func stats(samples []time.Duration) string {
	slices.Sort(samples)
	return fmt.Sprintf("p50 %s, max %s (%d)", ms(samples[len(samples)/2]), ms(samples[len(samples)-1]), len(samples))
}

// listChanges reads every page of GET /v1/changes without a cursor and
// returns how many pages and streams it had, and its changesCursor.
func (b *bench) listChanges(ctx context.Context, key string) (pages, streams int, changes string, err error) {
	for cursor := ""; ; {
		path := "/v1/changes?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body, _, err := b.get(ctx, key, path, "")
		if err != nil {
			return 0, 0, "", err
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return 0, 0, "", err
		}
		pages++
		streams += len(p.Data)
		if p.NextCursor == nil {
			if p.ChangesCursor == nil {
				return 0, 0, "", errors.New("the listing's last page has no changesCursor")
			}
			return pages, streams, *p.ChangesCursor, nil
		}
		cursor = *p.NextCursor
	}
}

// poll times n polls of GET /v1/changes with nothing changed, each from
// the changesCursor the one before returned (as a client does), which it
// leaves in changes.
func (b *bench) poll(ctx context.Context, key string, changes *string, n int) ([]time.Duration, error) {
	var samples []time.Duration
	for range n {
		body, took, err := b.get(ctx, key, "/v1/changes?limit=100&cursor="+url.QueryEscape(*changes), "")
		if err != nil {
			return nil, err
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, err
		}
		if len(p.Data) != 0 {
			return nil, fmt.Errorf("a poll with nothing changed listed %d streams", len(p.Data))
		}
		if p.ChangesCursor == nil {
			return nil, errors.New("a poll's last page has no changesCursor")
		}
		*changes = *p.ChangesCursor
		samples = append(samples, took)
	}
	return samples, nil
}

// keyRows prints the scale table's rows for the key of n restaurants.
func (b *bench) keyRows(ctx context.Context, n int, key string, polls, calls int) error {
	row := func(what, format string, args ...any) {
		fmt.Printf("%d restaurants | %s | %s\n", n, what, fmt.Sprintf(format, args...))
	}
	one := "/v1/restaurants/r000000/collections/areas/records?limit=1"
	_, first, err := b.get(ctx, key, one, "")
	if err != nil {
		return err
	}
	_, again, err := b.get(ctx, key, one, "")
	if err != nil {
		return err
	}
	row("first request of the key (a one-record walk page)", "%s (the same request again: %s)", ms(first), ms(again))

	// Every stream of the key written in one transaction just before the
	// listing (a bulk write): the next poll's worst case (see below).
	if _, err := b.conn.Exec(ctx, `UPDATE collection_streams SET changed_xact = pg_current_xact_id()::text::bigint
		WHERE restaurant_id < 'r' || lpad($1::int::text, 6, '0')`, n); err != nil {
		return err
	}

	start := time.Now()
	pages, streams, changes, err := b.listChanges(ctx, key)
	if err != nil {
		return err
	}
	row("GET /v1/changes, full listing without a cursor", "%d pages, %d streams, %s", pages, streams, time.Since(start).Round(time.Millisecond))

	poll := func() ([]time.Duration, error) { return b.poll(ctx, key, &changes, polls) }
	samples, err := poll()
	if err != nil {
		return err
	}
	row("a poll with nothing changed, right after a bulk write of all its streams", "%s", stats(samples))
	// The listing indexes key the epoch of a stream's last writing
	// transaction (changed_xact >> 10, migration 00023), so a poll reads
	// the streams written in up to 1,023 transactions before its position
	// and keeps those written after it. All the key's streams were written
	// in one transaction just before the listing, so the poll above reads
	// every one: its worst case. Ingest writes one stream per transaction:
	// 2,048 transactions later (any tenant's) is a poll's steady state.
	if err := b.advanceTransactions(ctx, 2048); err != nil {
		return err
	}
	if samples, err = poll(); err != nil {
		return err
	}
	row("a poll with nothing changed, 2,048 transactions later", "%s", stats(samples))

	list, walk, err := b.mcp(ctx, key, calls)
	if err != nil {
		return err
	}
	row("MCP tools/list", "%s", stats(list))
	row("MCP walk_records of one restaurant (limit 100)", "%s", stats(walk))

	for _, coding := range []string{"", "gzip", "zstd"} {
		body, took, err := b.get(ctx, key, "/v1/restaurants", coding)
		if err != nil {
			return err
		}
		name := coding
		if name == "" {
			name = "identity"
		}
		row("GET /v1/restaurants, "+name, "%d bytes, %s", len(body), ms(took))
	}
	return nil
}

// bearer adds the key to every request of an MCP session.
type bearer struct{ key string }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcp times tools/list and walk_records of one restaurant, calls times
// each, on one session.
func (b *bench) mcp(ctx context.Context, key string, calls int) (list, walk []time.Duration, err error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench-scale", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.api + "/mcp", HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	for range calls {
		start := time.Now()
		if _, err := s.ListTools(ctx, nil); err != nil {
			return nil, nil, err
		}
		list = append(list, time.Since(start))
		start = time.Now()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "walk_records",
			Arguments: map[string]any{"restaurantId": "r000000", "collection": "areas", "limit": 100}})
		if err != nil {
			return nil, nil, err
		}
		if res.IsError {
			return nil, nil, fmt.Errorf("walk_records: %v", res.Content)
		}
		walk = append(walk, time.Since(start))
	}
	return list, walk, nil
}

// seedWalk writes n records into restaurant's collection as ingest leaves
// them (change log, current state, stream position).
func (b *bench) seedWalk(ctx context.Context, restaurant, collection string, n int) error {
	for _, q := range []string{
		`INSERT INTO restaurants (id) VALUES ($1) ON CONFLICT DO NOTHING`,
		`INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256)
		 SELECT $1, $2, g, 'rec-' || lpad(g::text, 8, '0'), $1 || '-' || g, false,
		        json_build_object('name', 'area ' || g, 'isDeleted', false), 1700000000000, 1700000000000, 1,
		        sha256(g::text::bytea)
		 FROM generate_series(1, $3::int) g`,
		`INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
		                     captured_at, received_at, payload_version)
		 SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
		 FROM record_changes WHERE restaurant_id = $1 AND collection = $2`,
		`INSERT INTO collection_streams (restaurant_id, collection, last_sequence, max_record_bytes)
		 SELECT $1, $2, $3, COALESCE(max(octet_length(data::text)), 0)
		 FROM record_changes WHERE restaurant_id = $1 AND collection = $2
		 ON CONFLICT (restaurant_id, collection)
		 DO UPDATE SET last_sequence = excluded.last_sequence, max_record_bytes = excluded.max_record_bytes`,
	} {
		args := []any{restaurant, collection, n}
		if strings.HasPrefix(q, `INSERT INTO restaurants`) {
			args = args[:1]
		} else if strings.HasPrefix(q, `INSERT INTO records`) {
			args = args[:2]
		}
		if _, err := b.conn.Exec(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// walkCurve seeds a collection of n records on a restaurant of its own
// and times first and second pages of its walk.
func (b *bench) walkCurve(ctx context.Context, dir string, n, calls int) error {
	restaurant := fmt.Sprintf("walk-%d", n)
	start := time.Now()
	if err := b.seedWalk(ctx, restaurant, "areas", n); err != nil {
		return err
	}
	if _, err := b.conn.Exec(ctx, "ANALYZE records; ANALYZE record_changes"); err != nil {
		return err
	}
	seeded := time.Since(start)
	key, _, err := b.createKey(ctx, dir, restaurant, 0, restaurant)
	if err != nil {
		return err
	}
	path := "/v1/restaurants/" + restaurant + "/collections/areas/records?limit=100"
	// The key's first request (its lookup) is not the walk's cost.
	_, first, err := b.get(ctx, key, path, "")
	if err != nil {
		return err
	}
	var firsts, seconds []time.Duration
	for range calls {
		body, took, err := b.get(ctx, key, path, "")
		if err != nil {
			return err
		}
		firsts = append(firsts, took)
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		if len(p.Data) != 100 || p.NextCursor == nil {
			return fmt.Errorf("first page: %d records", len(p.Data))
		}
		_, took, err = b.get(ctx, key, path+"&cursor="+url.QueryEscape(*p.NextCursor), "")
		if err != nil {
			return err
		}
		seconds = append(seconds, took)
	}
	fmt.Printf("walk of %d records (seeded in %s) | first page %s | second page (pinned) %s | the key's first request %s\n",
		n, seeded.Round(time.Millisecond), stats(firsts), stats(seconds), ms(first))
	return nil
}
