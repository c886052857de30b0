package tests

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store"
)

// waitUntil polls cond on the test goroutine until it holds, failing the
// test if it does not within 30 seconds. It waits for an event (a
// listener up or down, a change heard); it never asserts a duration.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			require.Fail(t, "timed out waiting: "+what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyCacheOf reads a serve process's key cache metrics.
func keyCacheOf(t testing.TB, p *serveProc) (live, hits, changes float64) {
	c := keyCacheCounters(t, p)
	return c.live, c.hits, c.changes
}

// keyCounters are a key cache's metrics at one scrape.
type keyCounters struct {
	live, hits, misses, bypasses, changes, unreadable, lookups float64
}

func keyCacheCounters(t testing.TB, p *serveProc) keyCounters {
	f := scrapeURL(t, p.opsURL(t))
	return keyCounters{
		live:       f.value("foodsafe_key_cache_live"),
		hits:       f.value("foodsafe_key_cache_lookups_total", "result", "hit"),
		misses:     f.value("foodsafe_key_cache_lookups_total", "result", "miss"),
		bypasses:   f.value("foodsafe_key_cache_lookups_total", "result", "bypass"),
		changes:    f.value("foodsafe_key_cache_changes_heard_total"),
		unreadable: f.value("foodsafe_key_cache_changes_unreadable_total"),
		lookups:    f.value("foodsafe_key_cache_database_lookups_total"),
	}
}

// Two `foodsafe serve` processes with their key caches on: once a key
// command run by the CLI (a third process) returns, both refuse the old
// key or honour the new grant, a DBA's hand edit is heard by both, and a
// server frozen while a key is revoked does not answer from its cache
// when it wakes up.
func TestKeyCacheAcrossServers(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	env := []string{"DATABASE_URL=" + a.cfg.DatabaseURL, "FOODSAFE_CURSOR_KEY=" + rand.Text() + rand.Text(), "FOODSAFE_RATE_LIMIT=100000"}
	procs := []*serveProc{startServe(t, env...), startServe(t, env...)}
	reps := []*app{a.replica(procs[0]), a.replica(procs[1])}
	for _, p := range procs {
		waitUntil(t, "the key cache to go live", func() bool { live, _, _ := keyCacheOf(t, p); return live == 1 })
	}
	// newKey creates a key and waits until both servers have heard its
	// creation (which drops their caches, and would race warm).
	newKey := func(t *testing.T, grants ...auth.Grant) string {
		t.Helper()
		var before [2]float64
		for i, p := range procs {
			_, _, before[i] = keyCacheOf(t, p)
		}
		key := a.newKey(grants...)
		for i, p := range procs {
			waitUntil(t, "the key's creation to be heard", func() bool { _, _, c := keyCacheOf(t, p); return c > before[i] })
		}
		return key
	}
	// warm authenticates key on every server until one answer came from
	// the cache: without it the rest proves nothing. (One is not always
	// enough: a server whose listener has not proved itself within the
	// last second, on a loaded machine, looks keys up.)
	warm := func(t *testing.T, key, path string) {
		t.Helper()
		for i, r := range reps {
			waitUntil(t, "an answer from the key cache", func() bool {
				_, before, _ := keyCacheOf(t, procs[i])
				require.Equal(t, http.StatusOK, r.getAs(key, path).Status)
				_, after, _ := keyCacheOf(t, procs[i])
				return after > before
			})
		}
	}

	t.Run("keys revoke through the CLI: refused by both servers when it returns", func(t *testing.T) {
		key := newKey(t, grant("r1", "areas:read"))
		warm(t, key, "/v1/restaurants")
		started := time.Now()
		res := a.cli("keys", "revoke", publicID(t, key))
		require.Equal(t, 0, res.Code, res.Stderr)
		t.Logf("keys revoke took %v (process start and the wait of rule 4 included)", time.Since(started))
		for _, r := range reps {
			requireProblem(t, r.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		}
	})

	t.Run("ungrant and grant through the CLI: honoured by both servers when they return", func(t *testing.T) {
		key := newKey(t, grant("r1", "areas:read"), grant("r2", "areas:read"))
		warm(t, key, "/v1/restaurants/r2/collections/areas/records")
		require.Equal(t, 0, a.cli("keys", "ungrant", publicID(t, key), "r2").Code)
		for _, r := range reps {
			requireProblem(t, r.getAs(key, "/v1/restaurants/r2/collections/areas/records"), http.StatusNotFound, "not-found")
		}
		require.Equal(t, 0, a.cli("keys", "grant", publicID(t, key), "--grant", "r2=areas:read").Code)
		for _, r := range reps {
			require.Equal(t, http.StatusOK, r.getAs(key, "/v1/restaurants/r2/collections/areas/records").Status)
		}
	})

	t.Run("a hand edit in SQL is heard by both servers", func(t *testing.T) {
		key := newKey(t, grant("r1", "areas:read"))
		warm(t, key, "/v1/restaurants")
		var before [2]float64
		for i, p := range procs {
			_, _, before[i] = keyCacheOf(t, p)
		}
		edited := time.Now()
		_, err := a.store().Pool().Exec(context.Background(), `UPDATE api_keys SET revoked_at = now() WHERE public_id = $1`, publicID(t, key))
		require.NoError(t, err)
		for i, p := range procs {
			waitUntil(t, "the change to be heard", func() bool { _, _, c := keyCacheOf(t, p); return c > before[i] })
			requireProblem(t, reps[i].getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		}
		t.Logf("a hand edit was heard by both servers within %v of its commit (scrapes included)", time.Since(edited))
	})

	// changesHeard runs change and waits until both servers heard as many
	// changes as it makes.
	changesHeard := func(t *testing.T, n float64, change func()) {
		t.Helper()
		var before [2]float64
		for i, p := range procs {
			_, _, before[i] = keyCacheOf(t, p)
		}
		change()
		for i, p := range procs {
			waitUntil(t, "the change to be heard", func() bool { _, _, c := keyCacheOf(t, p); return c >= before[i]+n })
		}
	}

	t.Run("a change of another key leaves a cached key cached", func(t *testing.T) {
		cached := newKey(t, grant("r1", "areas:read"))
		other := newKey(t, grant("r1", "areas:read"))
		warm(t, cached, "/v1/restaurants")
		var before [2]keyCounters
		for i, p := range procs {
			before[i] = keyCacheCounters(t, p)
		}
		// Through the CLI, a third process: revoke, grant and ungrant the
		// other key; and a DBA's hand edit of it.
		changesHeard(t, 1, func() { require.Equal(t, 0, a.cli("keys", "revoke", publicID(t, other)).Code) })
		changesHeard(t, 1, func() {
			_, err := a.store().Pool().Exec(context.Background(), `UPDATE api_keys SET label = 'renamed' WHERE public_id = $1`, publicID(t, other))
			require.NoError(t, err)
		})
		third := newKey(t, grant("r1", "areas:read"))
		changesHeard(t, 1, func() {
			require.Equal(t, 0, a.cli("keys", "grant", publicID(t, third), "--grant", "r2=areas:read").Code)
		})
		changesHeard(t, 1, func() { require.Equal(t, 0, a.cli("keys", "ungrant", publicID(t, third), "r2").Code) })
		for i, r := range reps {
			require.Equal(t, http.StatusOK, r.getAs(cached, "/v1/restaurants").Status)
			after := keyCacheCounters(t, procs[i])
			require.Equal(t, before[i].hits+1, after.hits, "server %d answered the cached key from its cache", i)
			require.Equal(t, before[i].misses, after.misses, "server %d", i)
			require.Zero(t, after.unreadable, "server %d", i)
			requireProblem(t, r.getAs(other, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		}
	})

	t.Run("a change the servers cannot read drops every key, and is counted", func(t *testing.T) {
		key := newKey(t, grant("r1", "areas:read"))
		warm(t, key, "/v1/restaurants")
		var before [2]keyCounters
		for i, p := range procs {
			before[i] = keyCacheCounters(t, p)
		}
		// What a later release might send: it names no key this one reads.
		changesHeard(t, 1, func() {
			_, err := a.store().Pool().Exec(context.Background(), `SELECT pg_notify('foodsafe_keys', 'keys:one,two')`)
			require.NoError(t, err)
		})
		for i, r := range reps {
			require.Equal(t, http.StatusOK, r.getAs(key, "/v1/restaurants").Status)
			after := keyCacheCounters(t, procs[i])
			require.Equal(t, before[i].unreadable+1, after.unreadable, "server %d", i)
			require.Equal(t, before[i].hits, after.hits, "server %d looked the key up again", i)
			require.Greater(t, after.lookups, before[i].lookups, "server %d", i)
		}
	})

	t.Run("concurrent first requests of one key share one lookup", func(t *testing.T) {
		const n = 20
		p, r := procs[0], reps[0]
		ctx := context.Background()
		// A server that did not prove its listener within the last second
		// looks keys up one by one (bypass); such a round proves nothing
		// and is run again with a new key.
		waitUntil(t, "a round in which every request met a live cache", func() bool {
			key := newKey(t, grant("r1", "areas:read"), grant("r2", "areas:read"))
			// The lookup waits for this lock until every request is waiting.
			tx, err := a.store().Pool().Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, `LOCK TABLE key_grants IN ACCESS EXCLUSIVE MODE`)
			require.NoError(t, err)
			before := keyCacheCounters(t, p)
			done := make(chan []response, 1)
			go func() { done <- concurrently(n, func() response { return r.getAs(key, "/v1/restaurants") }) }()
			waitUntil(t, "every request to wait for a lookup", func() bool {
				c := keyCacheCounters(t, p)
				return c.misses+c.bypasses-before.misses-before.bypasses == n
			})
			// What PostgreSQL sees: the lookups waiting for the lock.
			waiting := func() (w int) {
				require.NoError(t, a.store().Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%KeyAuthLookup%'`).Scan(&w))
				return w
			}
			waitUntil(t, "the lookup to wait for the lock", func() bool { return waiting() > 0 })
			if keyCacheCounters(t, p).bypasses == before.bypasses {
				require.Equal(t, 1, waiting(), "one lookup for %d requests", n)
			}
			require.NoError(t, tx.Rollback(ctx))
			for _, res := range <-done {
				require.Equal(t, http.StatusOK, res.Status)
			}
			after := keyCacheCounters(t, p)
			bypasses := after.bypasses - before.bypasses
			t.Logf("%v misses, %v bypasses, %v database lookups", after.misses-before.misses, bypasses, after.lookups-before.lookups)
			require.Equal(t, 1+bypasses, after.lookups-before.lookups, "the misses shared one lookup")
			if bypasses > 0 {
				return false
			}
			require.Equal(t, before.hits, after.hits)
			// And the key is cached now.
			require.Equal(t, http.StatusOK, r.getAs(key, "/v1/restaurants").Status)
			require.Equal(t, after.hits+1, keyCacheCounters(t, p).hits)
			return true
		})
	})

	t.Run("a server frozen during a revocation does not use its cache when it wakes", func(t *testing.T) {
		key := newKey(t, grant("r1", "areas:read"))
		warm(t, key, "/v1/restaurants")
		frozen := procs[1]
		require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGSTOP))
		_, err := a.store().KeyRevoke(context.Background(), publicID(t, key))
		require.NoError(t, frozen.cmd.Process.Signal(syscall.SIGCONT))
		require.NoError(t, err)
		// The command returned after the silence bound; the server's first
		// request after waking must not trust a cache it has not proved
		// since, whether its listener or its request runs first.
		requireProblem(t, reps[1].getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		requireProblem(t, reps[0].getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	})
}

// One server's store whose connections (the listener's included) pass
// through a fault proxy, and an administrator's store that reaches
// PostgreSQL directly: while the listener is cut off, the cache is not
// used, and what changed meanwhile is not served from it afterwards.
func TestKeyCacheWhileTheListenerIsDown(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	admin := a.store()
	proxy, proxied := newDBProxy(t, a.cfg.DatabaseURL)
	ctx := context.Background()
	st, err := store.Open(ctx, proxied)
	require.NoError(t, err)
	t.Cleanup(st.Close)
	stop := st.StartKeyCache(slog.New(slog.DiscardHandler))
	t.Cleanup(stop)
	waitUntil(t, "the key cache to go live", func() bool { return st.KeyCacheStats().Live })

	lookup := func(key string) (*auth.KeyRecord, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return st.KeyForAuth(ctx, publicID(t, key))
	}
	// newKey creates a key and waits until the listener has heard its
	// creation (which drops the cache), then caches it.
	newKey := func(t *testing.T) string {
		t.Helper()
		heard := st.KeyCacheStats().Changes
		key := a.newKey(grant("r1", "areas:read"))
		waitUntil(t, "the key's creation to be heard", func() bool { return st.KeyCacheStats().Changes > heard })
		waitUntil(t, "a lookup answered from the cache", func() bool {
			hits := st.KeyCacheStats().Hits
			rec, err := lookup(key)
			require.NoError(t, err)
			require.Nil(t, rec.RevokedAt)
			return st.KeyCacheStats().Hits > hits
		})
		return key
	}

	t.Run("connection cut: no cached answer, and a change made meanwhile is seen after", func(t *testing.T) {
		key := newKey(t)
		proxy.p.Stop()
		waitUntil(t, "the listener to notice", func() bool { return !st.KeyCacheStats().Live })
		_, err := lookup(key)
		require.Error(t, err, "with the listener down the key is looked up (and the database is unreachable)")
		_, err = admin.Pool().Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE public_id = $1`, publicID(t, key))
		require.NoError(t, err)
		require.NoError(t, proxy.p.Start())
		waitUntil(t, "the listener to come back", func() bool { return st.KeyCacheStats().Live })
		rec, err := lookup(key)
		require.NoError(t, err)
		require.NotNil(t, rec.RevokedAt, "the revocation made while nobody listened")
	})

	t.Run("connection silently dead: a revocation returns after the bound and the cache is not trusted", func(t *testing.T) {
		key := newKey(t)
		// No byte passes, no connection is closed on the server's side:
		// the listener hears nothing and cannot tell until its ping goes
		// unanswered. Its backend is terminated too, so no list of
		// PostgreSQL's connections would show it any more.
		_, err := proxy.p.Toxics.AddToxicJson(toxicJSON("stall-down", "downstream"))
		require.NoError(t, err)
		_, err = proxy.p.Toxics.AddToxicJson(toxicJSON("stall-up", "upstream"))
		require.NoError(t, err)
		_, err = admin.Pool().Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'foodsafe key listener'`)
		require.NoError(t, err)
		started := time.Now()
		_, err = admin.KeyRevoke(ctx, publicID(t, key))
		require.NoError(t, err)
		t.Logf("keys revoke returned after %v", time.Since(started))
		require.False(t, st.KeyCacheStats().Live, "a listener silent for the bound is not trusted")
		_, err = lookup(key)
		require.Error(t, err, "looked up in the (stalled) database, not answered from the cache")
		require.NoError(t, proxy.p.Toxics.RemoveToxic(ctx, "stall-down"))
		require.NoError(t, proxy.p.Toxics.RemoveToxic(ctx, "stall-up"))
		waitUntil(t, "the listener to come back", func() bool { return st.KeyCacheStats().Live })
		rec, err := lookup(key)
		require.NoError(t, err)
		require.NotNil(t, rec.RevokedAt)
	})
}

// toxicJSON is a toxiproxy timeout toxic of 0: no data passes, and the
// proxy closes no connection.
func toxicJSON(name, stream string) io.Reader {
	return strings.NewReader(`{"name":"` + name + `","type":"timeout","stream":"` + stream + `","toxicity":1,"attributes":{"timeout":0}}`)
}

// FOODSAFE_KEY_CACHE=false: no listener, every request looks its key up.
// (With the cache on, a server goes live within milliseconds of start:
// TestKeyCacheAcrossServers waits for it.)
func TestKeyCacheOff(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	p := startServe(t, "DATABASE_URL="+a.cfg.DatabaseURL, "FOODSAFE_KEY_CACHE=false")
	r := a.replica(p)
	key := a.newKey(grant("r1", "areas:read"))
	const n = 20
	for range n {
		require.Equal(t, http.StatusOK, r.getAs(key, "/v1/restaurants").Status)
	}
	f := scrapeURL(t, p.opsURL(t))
	require.Zero(t, f.value("foodsafe_key_cache_live"))
	require.Zero(t, f.value("foodsafe_key_cache_lookups_total", "result", "hit"))
	require.Equal(t, float64(n), f.value("foodsafe_key_cache_lookups_total", "result", "bypass"))
	require.NotContains(t, p.logs.String(), "key cache on")
}
