package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// byID indexes a walk's records, failing when an id appears twice.
func byID(t testing.TB, es []envelopeDoc) map[string]envelopeDoc {
	t.Helper()
	out := make(map[string]envelopeDoc, len(es))
	for _, e := range es {
		_, dup := out[e.ID]
		require.False(t, dup, "%s appears twice in one walk", e.ID)
		out[e.ID] = e
	}
	return out
}

// currentState is the single-record read of id: its latest state.
func (a *app) currentState(key, restaurant, collection, id string) envelopeDoc {
	a.t.Helper()
	r := a.getAs(key, recordsPath(restaurant, collection)+"/"+id)
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var e envelopeDoc
	r.JSON(a.t, &e)
	return e
}

// A changes walk returns exactly the records created, updated,
// soft-deleted or deleted since the walk that issued its cursor, each once
// in its latest state; nothing unchanged; and ends with the next cursor.
func TestChangesWalkReturnsWhatChanged(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:write"), grant("r2", "areas:write"))
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		a.put(key, "r1", "areas", id, "m-"+id+"-1", area(id+"1"))
	}
	full, since := a.walkFrom(key, "r1", "areas", 3, "")
	require.Len(t, full, 8)

	// Nothing changed yet: one empty page, no nextCursor, a changesCursor
	// that again finds nothing.
	empty := a.walkStep(key, "r1", "areas", 3, since)
	require.Empty(t, empty.Data)
	require.Nil(t, empty.NextCursor)
	require.NotNil(t, empty.ChangesCursor)
	again, _ := a.walkFrom(key, "r1", "areas", 3, *empty.ChangesCursor)
	require.Empty(t, again)

	a.put(key, "r1", "areas", "b", "m-b-2", area("b2"))                                      // updated
	a.put(key, "r1", "areas", "c", "m-c-2", map[string]any{"name": "c1", "isDeleted": true}) // soft-deleted: data
	a.ingest(key, "r1", "areas", "d", "m-d-2", snapshot("r1", "d", "m-d-2", 1, true, nil))   // deleted: tombstone
	a.put(key, "r1", "areas", "e", "m-e-2", area("e2"))                                      // changed twice
	a.put(key, "r1", "areas", "i", "m-i-1", area("i1"))                                      // created
	a.put(key, "r1", "areas", "j", "m-j-1", area("j1"))                                      // created, then deleted
	a.put(key, "r1", "areas", "e", "m-e-3", area("e3"))
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", "areas", "j", "m-j-2", snapshot("r1", "j", "m-j-2", 1, true, nil)).Status)
	// Writes elsewhere are not changes of r1/areas.
	a.put(key, "r1", "products", "b", "m-pb-1", area("p"))
	a.put(key, "r2", "areas", "b", "m-r2b-1", area("r2"))

	// Any limit: a changesCursor is not bound to one.
	changed, next := a.walkFrom(key, "r1", "areas", 2, since)
	got := byID(t, changed)
	require.ElementsMatch(t, []string{"b", "c", "d", "e", "i", "j"}, slices.Collect(maps.Keys(got)), "exactly the changed records, each once")
	require.Equal(t, []string{"b:b2", "c:c1", "d:deleted", "i:i1", "e:e3", "j:deleted"}, names(t, changed), "by sequence, latest states")
	for id, e := range got {
		require.Equal(t, a.currentState(key, "r1", "areas", id), e, "%s is in its latest state", id)
	}
	require.JSONEq(t, `{"name":"c1","isDeleted":true}`, string(got["c"].Data), "a soft delete is data")
	require.False(t, got["c"].Deleted)
	for _, id := range []string{"d", "j"} {
		require.True(t, got[id].Deleted, "%s is a tombstone", id)
		require.Empty(t, got[id].Data)
	}

	// The same changesCursor may be used again (a client that lost its
	// transaction retries) and answers the same; the new one finds nothing.
	retried, _ := a.walkFrom(key, "r1", "areas", 50, since)
	require.Equal(t, changed, retried)
	none, _ := a.walkFrom(key, "r1", "areas", 50, next)
	require.Empty(t, none)

	// A changes walk is a snapshot too: its later pages are ordinary walk
	// pages pinned at its first page. A record changed during it appears
	// once, as it stood at the pin; a record created during it waits for
	// the next changes walk, which also carries the newer state.
	a.put(key, "r1", "areas", "f", "m-f-2", area("f2"))
	a.put(key, "r1", "areas", "g", "m-g-2", area("g2"))
	first := a.walkStep(key, "r1", "areas", 1, next)
	require.Equal(t, []string{"f:f2"}, names(t, first.Data))
	require.Nil(t, first.ChangesCursor)
	require.NotNil(t, first.NextCursor)
	a.put(key, "r1", "areas", "g", "m-g-3", area("g3"))
	a.put(key, "r1", "areas", "k", "m-k-1", area("k1"))
	second := a.walkStep(key, "r1", "areas", 1, *first.NextCursor)
	require.Equal(t, []string{"g:g2"}, names(t, second.Data), "as it stood at the pin")
	require.Nil(t, second.NextCursor)
	require.NotNil(t, second.ChangesCursor)
	later, _ := a.walkFrom(key, "r1", "areas", 1, *second.ChangesCursor)
	require.Equal(t, []string{"g:g3", "k:k1"}, names(t, later))

	// The nextCursor of a changes walk is an ordinary walk cursor: bound
	// to its limit.
	p := requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"?limit=2&cursor="+url.QueryEscape(*first.NextCursor)),
		http.StatusBadRequest, "invalid-request")
	require.Equal(t, "cursor", p.Errors[0].Parameter)
}

// An empty collection's walk is complete, and its changesCursor later
// returns every record created since.
func TestChangesWalkFromAnEmptyStream(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	none, since := a.walkFrom(key, "r1", "areas", 5, "")
	require.Empty(t, none)
	for i := 0; i < 12; i++ {
		a.put(key, "r1", "areas", fmt.Sprintf("a%02d", i), fmt.Sprintf("m%02d", i), area("x"))
	}
	got, _ := a.walkFrom(key, "r1", "areas", 5, since)
	require.Len(t, byID(t, got), 12)
}

// Every changesCursor that cannot be honoured is a 400 invalid-request on
// the cursor parameter telling the client to start a full walk, and says
// nothing about the data.
func TestChangesCursorRefusals(t *testing.T) {
	t.Parallel()
	cursorKey := strings.Repeat("k", 40)
	sameKey := withConfig(func(c *config.Config) { c.CursorKey = cursorKey })
	a := newApp(t, sameKey)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "products:read", "deliveries:read"), grant("r2", "areas:read"))
	for i := 0; i < 5; i++ {
		a.put(key, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area("x"))
	}
	_, since := a.walkFrom(key, "r1", "areas", 2, "")

	refused := func(t *testing.T, srv *app, key, path string) problemDoc {
		t.Helper()
		p := requireProblem(t, srv.getAs(key, path), http.StatusBadRequest, "invalid-request")
		require.Len(t, p.Errors, 1)
		require.Equal(t, "cursor", p.Errors[0].Parameter)
		require.Contains(t, p.Detail, "full walk")
		require.NotContains(t, p.Detail, since, "the cursor is not echoed")
		return p
	}
	q := func(c string) string { return "?limit=2&cursor=" + url.QueryEscape(c) }
	for name, path := range map[string]string{
		"other restaurant": recordsPath("r2", "areas") + q(since),
		"other collection": recordsPath("r1", "products") + q(since),
		"tampered":         recordsPath("r1", "areas") + q(flipChar(since, len(since)-5)),
		"tampered body":    recordsPath("r1", "areas") + q(flipChar(since, 10)),
		"truncated":        recordsPath("r1", "areas") + q(since[:len(since)-1]),
	} {
		t.Run(name, func(t *testing.T) { refused(t, a, key, path) })
	}
	t.Run("on the delivery list", func(t *testing.T) {
		p := requireProblem(t, a.getAs(key, deliveriesPath("r1", url.Values{"from": {"0"}, "to": {"10"}, "cursor": {since}})),
			http.StatusBadRequest, "invalid-request")
		require.Equal(t, "cursor", p.Errors[0].Parameter)
	})
	t.Run("signed with another key", func(t *testing.T) {
		other := newApp(t, withConfig(func(c *config.Config) { c.CursorKey = strings.Repeat("o", 40) }))
		other.addRestaurants("r1")
		okey := other.newKey(grant("r1", "areas:read"))
		refused(t, other, okey, recordsPath("r1", "areas")+q(since))
	})

	// The stream no longer reaches the cursor's position: the data was
	// restored from an older backup or reset (here: another database, same
	// cursor key). Refused, without telling the position or the head.
	t.Run("beyond the head", func(t *testing.T) {
		restored := newApp(t, sameKey)
		restored.addRestaurants("r1")
		rkey := restored.newKey(grant("r1", "areas:write", "areas:read"))
		p := refused(t, restored, rkey, recordsPath("r1", "areas")+q(since))
		require.NotRegexp(t, `[0-9]`, p.Detail, "no position in the detail")
		for i := 0; i < 3; i++ {
			restored.put(rkey, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area("x"))
		}
		refused(t, restored, rkey, recordsPath("r1", "areas")+q(since))
		// A full walk there works and issues a cursor it accepts.
		_, fresh := restored.walkFrom(rkey, "r1", "areas", 2, "")
		none, _ := restored.walkFrom(rkey, "r1", "areas", 2, fresh)
		require.Empty(t, none)
	})
}

// A changesCursor outlives the server that issued it and any number of
// cursor lifetimes: a new process with the same cursor key, with a clock
// a thousand lifetimes later, still honours it (while the nextCursor of
// an unfinished walk has long expired).
func TestChangesCursorOutlivesRestartsAndCursorTTL(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := withConfig(func(c *config.Config) { c.CursorKey = strings.Repeat("s", 40); c.CursorTTL = time.Hour })

	before := newApp(t, withDatabaseURL(dbURL), withClock(clock), cfg)
	before.addRestaurants("r1")
	key := before.newKey(grant("r1", "areas:write", "areas:read"))
	for i := 0; i < 5; i++ {
		before.put(key, "r1", "areas", fmt.Sprintf("a%d", i), fmt.Sprintf("m%d", i), area("x"))
	}
	_, since := before.walkFrom(key, "r1", "areas", 2, "")
	unfinished := *before.walkStep(key, "r1", "areas", 2, "").NextCursor
	before.put(key, "r1", "areas", "a1", "m1-2", area("y"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, before.svc.Close(ctx))

	mu.Lock()
	now = now.Add(1000 * time.Hour)
	mu.Unlock()
	after := newApp(t, withDatabaseURL(dbURL), withClock(clock), cfg)
	after.put(key, "r1", "areas", "a9", "m9", area("z"))
	got, _ := after.walkFrom(key, "r1", "areas", 2, since)
	require.Equal(t, []string{"a1:y", "a9:z"}, names(t, got))

	p := requireProblem(t, after.getAs(key, recordsPath("r1", "areas")+"?limit=2&cursor="+url.QueryEscape(unfinished)),
		http.StatusBadRequest, "invalid-request")
	require.Contains(t, p.Detail, "expired", "the clock really is past the walk cursors' lifetime")
}

// syncClient is a partner's copy of one collection, kept by the recipe
// of docs/partners-sync.md, "Changes walks".
type syncClient struct {
	records map[string]envelopeDoc
	since   string
}

// apply reconciles one walk into the copy: by id, overwriting when the
// received sequence is higher, tombstones kept as tombstones. A changes
// walk never brings a state older than the copy's.
func (c *syncClient) apply(t testing.TB, walk []envelopeDoc, since string) {
	t.Helper()
	for _, e := range byID(t, walk) {
		if old, ok := c.records[e.ID]; ok {
			require.Greater(t, e.seq(t), old.seq(t), "%s: a changes walk only brings newer states", e.ID)
		}
		c.records[e.ID] = e
	}
	c.since = since
}

// writeProgress lets the test wait, without sleeping, until a write that
// started after some point has committed.
type writeProgress struct {
	mu      sync.Mutex
	cond    *sync.Cond
	started int64 // tickets handed out
	done    int64 // highest ticket committed
	running int   // writers still running
}

// committedSinceNow blocks until the k-th write started after the call
// has committed (and with it at least one write that began after the
// call); false when every writer stopped first.
func (p *writeProgress) committedSinceNow(k int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := p.started
	for p.done < mark+k {
		if p.running == 0 {
			return false
		}
		p.cond.Wait()
	}
	return true
}

// While writers update, soft-delete, delete and create records at full
// speed, a client that repeats "changes walk, apply" (limit 7) over 5,000
// records converges exactly to the records table once the writes stop.
// Before each changes walk the client waits for a write that began after
// its previous walk ended, so every changes walk has something to bring;
// before the first it waits for 200, so that one spans many pages. (The
// first full walk runs before the writers start: a full walk under
// concurrent writes is TestWalkUnderConcurrentIngest's subject, and its
// pages cost more the more is written during it.)
func TestChangesWalkConvergesUnderConcurrentIngest(t *testing.T) {
	t.Parallel()
	const n, limit, walks, writers = 5_000, 7, 20, 3
	dbURL := testdb.URL(t)
	seedRecordsSQL(t, dbURL, "r1", "areas", n)
	a := newApp(t, withDatabaseURL(dbURL))
	key := a.newKey(grant("r1", "areas:write", "areas:read"))

	client := &syncClient{records: map[string]envelopeDoc{}}
	full, since := a.walkFrom(key, "r1", "areas", limit, "")
	require.Len(t, full, n)
	client.apply(t, full, since)

	progress := &writeProgress{running: writers}
	progress.cond = sync.NewCond(&progress.mu)
	stop := make(chan struct{})
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				progress.mu.Lock()
				progress.running--
				progress.cond.Broadcast()
				progress.mu.Unlock()
			}()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				target := fmt.Sprintf("rec-%07d", (i*997+w*3331)%n+1)
				mut := fmt.Sprintf("w%d-%d", w, i)
				var body map[string]any
				switch i % 4 {
				case 0:
					body = snapshot("r1", target, mut, 1, false, area(mut))
				case 1:
					body = snapshot("r1", target, mut, 1, false, map[string]any{"name": mut, "isDeleted": true})
				case 2:
					body = snapshot("r1", target, mut, 1, true, nil)
				default:
					target = fmt.Sprintf("new-%d-%d", w, i)
					body = snapshot("r1", target, mut, 1, false, area(mut))
				}
				progress.mu.Lock()
				progress.started++
				ticket := progress.started
				progress.mu.Unlock()
				hr, err := http.NewRequest(http.MethodPut, a.srv.URL+ingestPath("r1", "areas", target, mut), strings.NewReader(mustJSONString(body)))
				if err != nil {
					errs <- err
					return
				}
				hr.Header.Set("Authorization", "Bearer "+key)
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Idempotency-Key", mut)
				res, err := a.srv.Client().Do(hr)
				if err != nil {
					errs <- err
					return
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("ingest %s: status %d", mut, res.StatusCode)
					return
				}
				progress.mu.Lock()
				progress.done = max(progress.done, ticket)
				progress.cond.Broadcast()
				progress.mu.Unlock()
			}
		}()
	}
	stopWriters := func() {
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}

	for i := 0; i < walks; i++ {
		wait := int64(1)
		if i == 0 {
			wait = 200
		}
		if !progress.committedSinceNow(wait) {
			stopWriters() // reports why the writers stopped
			t.Fatal("every writer stopped early")
		}
		changed, since := a.walkFrom(key, "r1", "areas", limit, client.since)
		require.NotEmpty(t, changed, "changes walk %d: a write committed after the previous pin", i)
		if i == 0 {
			// One writer made at least 66 of those 200 writes, on as many
			// distinct records.
			require.Greater(t, len(changed), 9*limit, "the first changes walk spans many pages")
		}
		client.apply(t, changed, since)
	}
	stopWriters()

	// Writes have stopped: one more changes walk brings the rest, and the
	// one after it nothing.
	changed, since := a.walkFrom(key, "r1", "areas", limit, client.since)
	client.apply(t, changed, since)
	none, _ := a.walkFrom(key, "r1", "areas", limit, client.since)
	require.Empty(t, none)

	want := recordsTable(t, dbURL, "r1", "areas")
	require.Greater(t, len(want), n, "writers created records")
	require.Len(t, client.records, len(want))
	for id, w := range want {
		got, ok := client.records[id]
		require.True(t, ok, "%s missing from the copy", id)
		require.Equal(t, w.Sequence, got.Sequence, "%s", id)
		require.Equal(t, w.MutationID, got.MutationID, "%s", id)
		require.Equal(t, w.Deleted, got.Deleted, "%s", id)
		if w.Deleted {
			require.Empty(t, got.Data, "%s", id)
		} else {
			require.JSONEq(t, string(w.Data), string(got.Data), "%s", id)
		}
	}
}

func mustJSONString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// recordsTable reads a stream's current states straight from the table.
func recordsTable(t testing.TB, dbURL, restaurant, collection string) map[string]envelopeDoc {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT record_id, sequence::text, mutation_id, deleted, data
		FROM records WHERE restaurant_id = $1 AND collection = $2`, restaurant, collection)
	require.NoError(t, err)
	out := map[string]envelopeDoc{}
	for rows.Next() {
		var e envelopeDoc
		var data []byte
		require.NoError(t, rows.Scan(&e.ID, &e.Sequence, &e.MutationID, &e.Deleted, &data))
		e.Data = data
		out[e.ID] = e
	}
	require.NoError(t, rows.Err())
	return out
}
