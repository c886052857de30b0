package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/mirror"
	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// countingProxy stands in front of the server and counts every request
// that reaches it; after each page of GET /v1/records it has answered
// (but a catch-up's first, which names since instead of a cursor) it
// calls afterFeed with the page's number (from 1), on the proxy's own
// goroutine (so afterFeed reports errors through the proxy, never with
// require).
type countingProxy struct {
	*httptest.Server
	mu        sync.Mutex
	requests  int
	byPath    map[string]int
	feed      []string // the cursor of each GET /v1/records but a catch-up's first ("" for none)
	afterFeed func(page int) error
	errs      []error
}

func newCountingProxy(t testing.TB, upstream string) *countingProxy {
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &countingProxy{byPath: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests++
		p.byPath[r.URL.Path]++
		isFeed := r.URL.Path == "/v1/records" && !r.URL.Query().Has("since")
		if isFeed {
			p.feed = append(p.feed, r.URL.Query().Get("cursor"))
		}
		page, after := len(p.feed), p.afterFeed
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
		if isFeed && after != nil {
			if err := after(page); err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, err)
				p.mu.Unlock()
			}
		}
	}))
	t.Cleanup(p.Close)
	return p
}

// take returns the counts so far and starts them again.
func (p *countingProxy) take(t testing.TB) (requests int, byPath map[string]int, feed []string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Empty(t, p.errs, "the proxy's hook failed")
	requests, byPath, feed = p.requests, p.byPath, p.feed
	p.requests, p.byPath, p.feed = 0, map[string]int{}, nil
	return requests, byPath, feed
}

func (p *countingProxy) setAfterFeed(f func(page int) error) {
	p.mu.Lock()
	p.afterFeed = f
	p.mu.Unlock()
}

// feedGrants grants a read of the first n collections of every restaurant
// (and their deliveries with deliveries).
func feedGrants(restaurants []string, n int, deliveries bool) []auth.Grant {
	var reads []string
	for _, c := range catalog.Collections[:n] {
		reads = append(reads, c.ReadScope())
	}
	if deliveries {
		reads = append(reads, catalog.DeliveriesRead)
	}
	grants := make([]auth.Grant, len(restaurants))
	for i, r := range restaurants {
		grants[i] = grant(r, reads...)
	}
	return grants
}

// feedCollections are the names of the first n collections.
func feedCollections(n int) []string {
	var out []string
	for _, c := range catalog.Collections[:n] {
		out = append(out, c.Name)
	}
	return out
}

// seedFeed makes restaurants r000... with perStream records in each of
// the first n collections, and returns their ids.
func seedFeed(t *testing.T, a *app, restaurants, n, perStream int) []string {
	t.Helper()
	ids := make([]string, restaurants)
	now := time.Now()
	for i := range ids {
		ids[i] = fmt.Sprintf("r%03d", i)
	}
	a.addRestaurants(ids...)
	for _, r := range ids {
		for _, c := range catalog.Collections[:n] {
			for k := 0; k < perStream; k++ {
				id := fmt.Sprintf("rec-%d", k)
				scaleIngest(t, a.store(), r, c.Name, id, "m-"+r+"-"+c.Name+"-"+id, now)
			}
		}
	}
	return ids
}

// inProcessSync runs one sync of the mirror library against api, with
// its log kept.
func inProcessSync(ctx context.Context, t testing.TB, api, key, target string, logs *bytes.Buffer) (string, mirror.Summary, error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, nil))
	c, err := partnerapi.NewClient(api, key, log)
	require.NoError(t, err)
	tg, err := targets.Open(context.Background(), target)
	require.NoError(t, err)
	t.Cleanup(func() { tg.Close() })
	s := mirror.NewSyncer(c, tg, mirror.Options{}, log, nil)
	sum, err := s.Run(ctx)
	next := s.NextRun()
	require.NoError(t, tg.Close())
	return next, sum, err
}

// interruptFirstSync runs a first sync into target through the proxy and
// cancels it when the feed's second page is asked for (the first page is
// applied by then); it returns the run's stop message.
func interruptFirstSync(t *testing.T, proxy *countingProxy, key, target string, logs *bytes.Buffer) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy.setAfterFeed(func(page int) error {
		if page == 2 {
			cancel()
		}
		return nil
	})
	next, _, err := inProcessSync(ctx, t, proxy.URL, key, target, logs)
	require.ErrorIs(t, err, context.Canceled)
	proxy.setAfterFeed(nil)
	return next
}

// A first sync of 400 restaurants x 5 collections (2,000 records, one per
// stream) reads them through the key-wide feed: at most 250 requests,
// counted as they reach the server (the goal; a walk per stream
// cost 2,000 and more). The mirror equals the server, and the next runs
// list changes (GET /v1/changes) and walk the streams that changed,
// never the feed again.
func TestSyncFirstSyncThroughFeed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 400, 5, 1)
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	proxy := newCountingProxy(t, a.srv.URL)
	target := sqliteTarget(t)

	r := runSync(t, key, "--api", proxy.URL, "--to", target, "--json")
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	requests, byPath, feed := proxy.take(t)
	t.Logf("first sync of 400 restaurants x 5 collections: %d requests at the server (%d of GET /v1/records)", requests, byPath["/v1/records"])
	require.LessOrEqual(t, requests, 250)
	require.NotEmpty(t, feed, "the first sync read the feed")
	require.Empty(t, feed[0], "from its beginning")
	sum := r.summary(t)
	require.Equal(t, int64(2000), sum.Records)
	require.Equal(t, 2000, sum.Streams, "every stream ended by the feed")
	require.Equal(t, int64(requests), sum.Requests, "the client counts what the server saw")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
	db, q := openTarget(t, target)
	var kept int
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM sync_state WHERE changes_cursor IS NOT NULL AND walk_cursor IS NULL AND walk_kind IS NULL`)).Scan(&kept))
	require.Equal(t, 2000, kept, "every stream keeps the cursor its walk would have ended at")
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM stream_heads`)).Scan(&kept))
	require.Equal(t, 2000, kept, "and its head")

	// A later run: two streams changed, caught up through the feed of
	// what changed since the position the first sync kept.
	scaleIngest(t, a.store(), "r123", catalog.Collections[2].Name, "rec-new", "m-later-1", time.Now())
	scaleIngest(t, a.store(), "r399", catalog.Collections[4].Name, "rec-0", "m-later-2", time.Now())
	r = runSync(t, key, "--api", proxy.URL, "--to", target, "--json")
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	requests, byPath, feed = proxy.take(t)
	require.Equal(t, 1, byPath["/v1/records"], "later runs read one page of the feed of what changed")
	require.Empty(t, feed, "not the feed of everything")
	require.Zero(t, byPath["/v1/changes"])
	require.Equal(t, 2, r.summary(t).Streams)
	require.LessOrEqual(t, requests, 2, "the grants and a page of what changed")
	requireMirrorEqual(t, a, target, "r123", targets.TombstoneMark, feedCollections(5)...)
	requireMirrorEqual(t, a, target, "r399", targets.TombstoneMark, feedCollections(5)...)
}

// mirrorRows is every collection row and delivery of a mirror, for
// comparing two mirrors.
func mirrorRows(t testing.TB, target string) []string {
	t.Helper()
	db, _ := openTarget(t, target)
	var out []string
	for _, c := range catalog.Collections {
		rows, err := db.Query(`SELECT restaurant_id, id, sequence, deleted, coalesce(data, ''), mutation_id FROM ` + typed.TableName(c.Name) + ` ORDER BY restaurant_id, id`)
		if err != nil && strings.Contains(err.Error(), "no such table") {
			continue
		}
		require.NoError(t, err)
		for rows.Next() {
			var rid, id, data, mutation string
			var seq int64
			var deleted bool
			require.NoError(t, rows.Scan(&rid, &id, &seq, &deleted, &data, &mutation))
			out = append(out, fmt.Sprint(c.Name, rid, id, seq, deleted, data, mutation))
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	var heads int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM stream_heads`).Scan(&heads))
	return append(out, fmt.Sprint("heads ", heads))
}

// A first sync interrupted after two pages of the feed (its context
// cancelled) keeps every page it applied and the feed's cursor; the next
// run resumes the feed from that cursor, not from its beginning, and
// ends with the same mirror as an uninterrupted first sync.
func TestSyncFirstSyncResumesInsideTheFeed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 60, 5, 4) // 1,200 records: 3 pages of the feed
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	proxy := newCountingProxy(t, a.srv.URL)

	whole := sqliteTarget(t)
	var logs bytes.Buffer
	_, sum, err := inProcessSync(context.Background(), t, proxy.URL, key, whole, &logs)
	require.NoError(t, err, logs.String())
	require.Equal(t, int64(1200), sum.Records)
	_, _, feed := proxy.take(t)
	require.Len(t, feed, 3, "the uninterrupted first sync: three pages")

	target := sqliteTarget(t)
	next := interruptFirstSync(t, proxy, key, target, &logs)
	require.Contains(t, next, "resumes the first listing of every record")
	_, _, first := proxy.take(t)
	require.Len(t, first, 2, "interrupted after the second page")
	db, q := openTarget(t, target)
	var kept string
	require.NoError(t, db.QueryRow(q(`SELECT value FROM mirror_meta WHERE name = 'feed_cursor'`)).Scan(&kept))
	require.NotEmpty(t, kept)
	var applied int
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM stream_heads`)).Scan(&applied))
	require.Positive(t, applied, "the first page's streams are kept")

	next, _, err = inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, _, second := proxy.take(t)
	require.NotEmpty(t, second)
	require.NotEmpty(t, second[0], "the next run resumes the feed from its kept cursor")
	require.Equal(t, kept, second[0])
	require.Less(t, len(second), 3, "and reads only what was left")
	require.Contains(t, logs.String(), "resuming the first listing")
	require.Contains(t, next, "lists the streams that changed")
	require.Equal(t, mirrorRows(t, whole), mirrorRows(t, target), "the same mirror as an uninterrupted first sync")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
	require.Zero(t, mustCount(t, db, `SELECT count(*) FROM mirror_meta WHERE name = 'feed_cursor'`), "no feed under way")
}

func mustCount(t testing.TB, db *sql.DB, query string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(query).Scan(&n))
	return n
}

// Records written while the feed runs (in a stream it has passed, in one
// it has not reached, in a stream that was empty when it began, and a
// delivery) are in the mirror when the run ends: the feed of what changed
// since the feed's changes cursor brings them, from where the feed left
// their streams.
func TestSyncFeedMissesNoWriteDuringIt(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 60, 5, 4)
	a.addRestaurants("r-empty")
	restaurants = append(restaurants, "r-empty")
	key := a.newKey(feedGrants(restaurants, 5, true)...)
	proxy := newCountingProxy(t, a.srv.URL)
	now := time.Now()
	proxy.setAfterFeed(func(page int) error {
		if page != 1 {
			return nil
		}
		st := a.store()
		for _, w := range []struct{ r, c, id string }{
			{"r000", catalog.Collections[0].Name, "rec-0"},  // passed: a new version
			{"r059", catalog.Collections[4].Name, "rec-9"},  // not reached yet
			{"r-empty", catalog.Collections[1].Name, "new"}, // a stream that was empty
		} {
			if err := ingestDirect(st, w.r, w.c, w.id, "m-during-"+w.r+w.id, now); err != nil {
				return err
			}
		}
		return deliveryDirect(st, "r030", "d-during", now)
	})
	target := sqliteTarget(t)
	var logs bytes.Buffer
	_, _, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, byPath, feed := proxy.take(t)
	require.Len(t, feed, 3)
	require.Equal(t, 4, byPath["/v1/records"], "the feed's changes cursor was caught up from")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
	db, q := openTarget(t, target)
	var n int
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM deliveries WHERE id = 'd-during'`)).Scan(&n))
	require.Equal(t, 1, n, "the delivery received during the feed")
}

// A feed cursor the server refuses (here expired: the run that kept it
// stopped more than a walk's lifetime ago) starts the feed over from its
// beginning, saying so, and the mirror ends equal to the server.
func TestSyncRefusedFeedCursorStartsOver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	a := newApp(t, withClock(clock))
	restaurants := seedFeed(t, a, 60, 5, 4)
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	proxy := newCountingProxy(t, a.srv.URL)
	target := sqliteTarget(t)
	var logs bytes.Buffer
	interruptFirstSync(t, proxy, key, target, &logs)
	proxy.take(t)

	mu.Lock()
	now = now.Add(25 * time.Hour) // past any walk cursor's lifetime
	mu.Unlock()
	_, _, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, _, feed := proxy.take(t)
	require.Len(t, feed, 4, "the kept cursor, refused, then the whole feed again")
	require.NotEmpty(t, feed[0], "the run tried its kept cursor")
	require.Empty(t, feed[1], "and, refused, started the feed over")
	require.Contains(t, logs.String(), "starting it over from the beginning")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
}

// ingestDirect is scaleIngest for another goroutine than the test's: it
// returns its error.
func ingestDirect(st *store.Store, restaurant, collection, id, mutation string, at time.Time) error {
	data := json.RawMessage(`{"name":"` + id + `","isDeleted":false}`)
	sum := sha256.Sum256([]byte(mutation))
	_, _, err := st.RecordIngest(context.Background(), store.Mutation{
		RecordKey:  store.RecordKey{RestaurantID: restaurant, Collection: collection, RecordID: id},
		MutationID: mutation, Data: data, CapturedAt: at.UnixMilli(), PayloadVersion: 1, RequestSHA256: sum[:],
	}, at.UnixMilli())
	return err
}

// deliveryDirect is scaleDelivery for another goroutine than the test's.
func deliveryDirect(st *store.Store, restaurant, id string, at time.Time) error {
	d := wire.Delivery{
		ID: id, RestaurantID: restaurant, OccurredAt: wire.Millis(at.UnixMilli()), IsCompliant: true,
		Supplier: wire.Supplier{ID: "s1", Name: "Supplier"}, TemperatureRecords: []wire.TemperatureRecord{},
		NonComplianceReasons: []string{}, CorrectiveActions: []string{},
	}
	digest, err := d.ContentDigest()
	if err != nil {
		return err
	}
	_, _, err = st.DeliveryCreate(context.Background(), d, digest)
	return err
}

// foodsafe-sync interrupted (SIGINT) inside a first sync's feed says what
// is true: every page applied is kept and the next run resumes the first
// listing after its last applied page; that next run does.
func TestSyncInterruptedFeedSaysWhereItResumes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 60, 5, 4)
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	proxy := newCountingProxy(t, a.srv.URL)
	target := sqliteTarget(t)
	var proc atomic.Pointer[os.Process]
	proxy.setAfterFeed(func(page int) error {
		if page != 2 {
			return nil
		}
		p := proc.Load()
		if p == nil {
			return errors.New("no process to interrupt")
		}
		return p.Signal(os.Interrupt)
	})
	l := startSync(t, key, "--api", proxy.URL, "--to", target, "--once")
	proc.Store(l.cmd.Process)
	res := l.wait(t)
	require.Equal(t, 1, res.Code, "stderr:\n%s", res.Stderr)
	require.Contains(t, res.Stderr, "interrupted; every page applied is kept: the next run resumes the first listing of every record (GET /v1/records) after its last applied page")
	proxy.setAfterFeed(nil)
	_, _, feed := proxy.take(t)
	require.Len(t, feed, 2)

	r := runSync(t, key, "--api", proxy.URL, "--to", target, "--json")
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	_, _, feed = proxy.take(t)
	require.NotEmpty(t, feed)
	require.NotEmpty(t, feed[0], "the next run resumed the feed")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
}

// Against a server without the key-wide feed (404), a first sync walks
// every stream, as before the feed, saying so; the mirror equals the
// server.
func TestSyncFirstSyncWithoutFeedWalksEachStream(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 10, 5, 2)
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	var refused atomic.Int64
	api := faultProxy(t, a.srv.URL, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/records" {
			return false
		}
		refused.Add(1)
		writeProblem(w, r, http.StatusNotFound, "not-found")
		return true
	})
	target := sqliteTarget(t)
	r := runSync(t, key, "--api", api, "--to", target, "--json")
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	require.Equal(t, int64(1), refused.Load(), "asked once")
	require.Contains(t, r.Stderr, "the server has no key-wide feed (GET /v1/records); walking every stream instead")
	require.Equal(t, 50, r.summary(t).Streams, "every stream walked")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
}

// A key whose grants change while its first sync's feed is under way: the
// server starts the feed over from its beginning when the kept cursor
// comes back (its cursors are bound to what the key reads), the streams
// already ended are brought again as rebuilds, and the mirror ends equal
// to the server, the newly granted restaurant included.
func TestSyncFeedAcrossAGrantChange(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 60, 5, 4)
	key := a.newKey(feedGrants(restaurants[:59], 5, false)...)
	proxy := newCountingProxy(t, a.srv.URL)
	target := sqliteTarget(t)
	var logs bytes.Buffer
	interruptFirstSync(t, proxy, key, target, &logs)
	proxy.take(t)

	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, key), feedGrants(restaurants[59:], 5, false)))
	require.Eventually(t, func() bool {
		return strings.Contains(string(a.getAs(key, "/v1/restaurants").Body), `"r059"`)
	}, 10*time.Second, 50*time.Millisecond, "the server sees the new grant")
	_, _, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, _, feed := proxy.take(t)
	require.Len(t, feed, 3, "the kept cursor started the feed over: three pages again")
	require.NotEmpty(t, feed[0])
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
	db, q := openTarget(t, target)
	var n int
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM stream_heads`)).Scan(&n))
	require.Equal(t, 300, n, "every stream of the 60 restaurants")
}

// A first sync that meets its --deadline inside the feed (here the
// second page never comes: the proxy holds it until the client gives up)
// exits 1 saying where the next run resumes, and the next run resumes the
// feed from its kept cursor.
func TestSyncFeedStopsAtItsDeadline(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	restaurants := seedFeed(t, a, 60, 5, 4)
	key := a.newKey(feedGrants(restaurants, 5, false)...)
	var pages atomic.Int64
	var held atomic.Bool
	api := faultProxy(t, a.srv.URL, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v1/records" || pages.Add(1) != 2 {
			return false
		}
		held.Store(true)
		<-r.Context().Done() // the client gave up: its deadline passed
		return true
	})
	target := sqliteTarget(t)
	r := runSync(t, key, "--api", api, "--to", target, "--json", "--deadline", "10s")
	require.Equal(t, 1, r.Code, "stderr:\n%s", r.Stderr)
	require.True(t, held.Load(), "the first page was applied and the second held")
	require.Contains(t, r.Stderr, "run stopped: its deadline of 10s passed (--deadline); every page applied is kept: the next run resumes the first listing of every record (GET /v1/records) after its last applied page")

	proxy := newCountingProxy(t, a.srv.URL)
	again := runSync(t, key, "--api", proxy.URL, "--to", target, "--json")
	require.Equal(t, 0, again.Code, "stderr:\n%s", again.Stderr)
	_, _, feed := proxy.take(t)
	require.Len(t, feed, 2, "the second and third pages")
	require.NotEmpty(t, feed[0], "from the kept cursor")
	for _, rid := range restaurants {
		requireMirrorEqual(t, a, target, rid, targets.TombstoneMark, feedCollections(5)...)
	}
}
