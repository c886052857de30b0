package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/singleflight"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// The key cache saves the key lookup, one of a read's two round trips:
// a server remembers the keys it has authenticated (with their grants,
// indexed once: auth.KeyRecord.Index) and forgets a key whenever it
// changes. Revocation stays immediate in the spec's sense because of four
// rules:
//
//  1. Every change to api_keys or key_grants, by the key commands or by
//     hand, is announced on keyChannel when it commits, naming the keys
//     it changed, or '*' for all of them (the statement triggers of
//     migrations 00012 and 00021). A server forgets the keys named, and
//     every key on '*' or on a payload it cannot read.
//  2. A server uses its cache only while its listening connection is
//     up and was proved, less than keyMaxSilence ago by both the
//     monotonic and the wall clock (a suspended host stops the first),
//     to be the very backend that listens. PostgreSQL sends a
//     notification to an idle listener at once and to a busy one before
//     its next ReadyForQuery, so a proof answered means every change
//     committed before it was sent has been heard. Otherwise every
//     request looks its key up, as without a cache.
//  3. A lookup fills the cache only if no change of its key (nor of every
//     key) was heard since it started, so a read that raced a revocation
//     cannot put the old key back; and a request that arrives once a
//     change of its key was heard never waits for a lookup begun before
//     it, but starts its own.
//  4. The store's key commands return keyMaxSilence (plus a margin)
//     after their commit. By then every server has either heard the
//     change (normally within milliseconds) or stopped trusting its
//     cache by rule 2, including a server whose connection died in a way
//     it has not noticed and which no list of listeners would show. So
//     when `foodsafe keys revoke` returns, no server accepts the key.
//
// Concurrent requests of a key the cache does not hold share one lookup
// (rule 3 decides who may join it): a key of 20,000 restaurants polled a
// hundred times a second costs one lookup when it changes, not one per
// request until the first returns.
//
// On Citus the cache stays off (keys are reference tables whose triggers
// fire on the workers; the coordinator-side guarantee is untested there).
const (
	keyChannel = "foodsafe_keys"
	// keyListenerName is the application_name of the listening
	// connections, for DBAs reading pg_stat_activity.
	keyListenerName = "foodsafe key listener"
	// keyPingEvery is how often an idle listener proves its connection.
	keyPingEvery = 250 * time.Millisecond
	// keyMaxSilence is how long after its last proof a server still
	// trusts its cache: the bound on a revocation's delay when a
	// listening connection dies silently.
	keyMaxSilence = time.Second
	// keyWaitMargin is added to keyMaxSilence when a key command waits.
	keyWaitMargin = 100 * time.Millisecond
	// keyCacheMax bounds the cache; beyond it keys are looked up.
	keyCacheMax = 10_000
	// keyAll is the payload that names every key.
	keyAll = "*"
	// keyLookupTimeout bounds a shared lookup, which runs on for the
	// requests still waiting when the one that started it hangs up.
	keyLookupTimeout = 30 * time.Second
)

// keyCache is one server's cache of key lookups. Only keys that exist
// are cached: an unknown public id is looked up every time (and such
// requests are throttled per client address).
type keyCache struct {
	mu      sync.Mutex
	entries map[string]*auth.KeyRecord
	// flights are the shared lookups under way, by public id; a change
	// heard while one runs marks it stale and takes it out of the map.
	flights map[string]*keyFlight
	live    bool
	// proved is when the last ping that succeeded was sent.
	proved time.Time
	// lookups shares the lookups of one key (under its public id).
	lookups singleflight.Group

	hits, misses, bypasses, changes, unreadable, dbLookups atomic.Uint64
}

// keyFlight is one shared lookup; stale once a change of its key was
// heard after it started: its result may predate the change.
type keyFlight struct{ stale bool }

// get returns the cached record of publicID (nil when not held), and
// whether the cache may be used at all.
func (c *keyCache) get(publicID string, now time.Time) (*auth.KeyRecord, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.usable(now) {
		return nil, false
	}
	return c.entries[publicID], true
}

func (c *keyCache) usable(now time.Time) bool {
	return c.live && now.Sub(c.proved) < keyMaxSilence && now.Round(0).Sub(c.proved.Round(0)) < keyMaxSilence
}

// begin registers a shared lookup of publicID about to read the database.
func (c *keyCache) begin(publicID string) *keyFlight {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &keyFlight{stale: !c.live}
	if c.flights == nil {
		c.flights = make(map[string]*keyFlight)
	}
	c.flights[publicID] = f
	return f
}

// end caches what flight f found (rec, nil for no key) unless a change
// of the key was heard since it began.
func (c *keyCache) end(publicID string, f *keyFlight, rec *auth.KeyRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flights[publicID] == f {
		delete(c.flights, publicID)
	}
	if f.stale || rec == nil || !c.live || len(c.entries) >= keyCacheMax {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*auth.KeyRecord)
	}
	c.entries[publicID] = rec
}

// heard applies one notification: the payload names a key, or every key.
func (c *keyCache) heard(payload string) {
	switch {
	case payload == keyAll:
		c.forgetAll()
	case auth.ValidPublicID(payload):
		c.forget(payload)
	default:
		// A release that names keys another way: forgetting everything is
		// always safe.
		c.unreadable.Add(1)
		c.forgetAll()
	}
}

// forget drops one key: a change of it was heard.
func (c *keyCache) forget(publicID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, publicID)
	if f, ok := c.flights[publicID]; ok {
		f.stale = true
		delete(c.flights, publicID)
	}
	// Also a lookup that has not begun yet: the next request starts anew.
	c.lookups.Forget(publicID)
	c.changes.Add(1)
}

// forgetAll drops every key: a change of every key was heard.
func (c *keyCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropAll()
	c.changes.Add(1)
}

// dropAll forgets every key and every lookup under way; c.mu is held.
func (c *keyCache) dropAll() {
	clear(c.entries)
	for publicID, f := range c.flights {
		f.stale = true
		c.lookups.Forget(publicID)
	}
	clear(c.flights)
}

// setLive turns the cache on (the listener has just started listening,
// proved at now) or off (the listener lost its connection). Either way
// what was held is dropped: changes made while nobody listened were not
// heard.
func (c *keyCache) setLive(live bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropAll()
	c.live, c.proved = live, now
}

// prove records a ping that was sent at sent and answered.
func (c *keyCache) prove(sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proved = sent
}

// heardBy reports whether a proof sent after t was answered while the
// listener is up (or the listener began after t, with nothing cached).
func (c *keyCache) heardBy(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live && c.proved.After(t)
}

func (c *keyCache) stats(now time.Time) metrics.KeyCache {
	c.mu.Lock()
	live, size := c.usable(now), len(c.entries)
	c.mu.Unlock()
	return metrics.KeyCache{Live: live, Size: size, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Bypasses: c.bypasses.Load(), Changes: c.changes.Load(), Unreadable: c.unreadable.Load(),
		DatabaseLookups: c.dbLookups.Load()}
}

// KeyCacheStats reads the key cache's state and counters for /metrics.
func (s *Store) KeyCacheStats() metrics.KeyCache { return s.keys.stats(time.Now()) }

// KeyChangesHeardBy reports whether this server has heard every key
// change committed before t (rule 2 of the key cache: a ping sent after
// t was answered, or the listener began after t with an empty cache).
// From then on a key looked up stays cached until it changes again.
func (s *Store) KeyChangesHeardBy(t time.Time) bool { return s.keys.heardBy(t) }

// StartKeyCache turns the key cache on: a goroutine keeps a connection
// listening for key changes (reconnecting with backoff) and the cache is
// used while it is up. Until it first listens, keys are looked up. The
// returned function stops it and turns the cache off.
func (s *Store) StartKeyCache(log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.listenForKeyChanges(ctx, log)
	}()
	return func() {
		cancel()
		<-done
	}
}

// listenForKeyChanges runs the listener until ctx ends.
func (s *Store) listenForKeyChanges(ctx context.Context, log *slog.Logger) {
	const firstWait, maxWait = 100 * time.Millisecond, 5 * time.Second
	wait, down := firstWait, false
	for {
		listened, err := s.listenOnce(ctx, log)
		s.keys.setLive(false, time.Time{})
		if ctx.Err() != nil || errors.Is(err, errCitus) {
			return
		}
		if listened {
			wait, down = firstWait, false
		}
		if !down {
			// Once per outage: the cache is off until the listener is back.
			log.Warn("key cache off: not listening for key changes, every request looks its key up until the listener reconnects",
				"error", err)
			down = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}

var errCitus = errors.New("citus")

// listenOnce connects, listens and keeps the cache coherent until the
// connection fails or ctx ends; listened says whether it got as far as
// listening.
func (s *Store) listenOnce(ctx context.Context, log *slog.Logger) (listened bool, err error) {
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	cfg.RuntimeParams["application_name"] = keyListenerName
	// Runs on this goroutine, inside whichever call reads the message.
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel == keyChannel {
			s.keys.heard(n.Payload)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	conn, err := pgconn.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := conn.Exec(rctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus'); LISTEN "+keyChannel).ReadAll()
	if err != nil {
		return false, err
	}
	if len(res) > 0 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == "t" {
		log.Info("key cache off on Citus: every request looks its key up")
		return false, errCitus
	}
	sent := time.Now()
	if err := proveListening(rctx, conn); err != nil {
		return false, err
	}
	s.keys.setLive(true, sent)
	log.Info("key cache on: listening for key changes")
	for {
		wctx, cancel := context.WithTimeout(ctx, keyPingEvery)
		err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return true, ctx.Err()
		case err != nil && !pgconn.Timeout(err):
			return true, err
		}
		sent := time.Now()
		pctx, cancel := context.WithTimeout(ctx, keyMaxSilence)
		err = proveListening(pctx, conn)
		cancel()
		if err != nil {
			return true, err
		}
		s.keys.prove(sent)
	}
}

// errNotListening: the connection answers, but from a backend that is
// not the one listening (a transaction-pooling proxy in between).
var errNotListening = errors.New("the connection's backend is not the one listening for key changes: " +
	"a transaction-pooling proxy cannot carry LISTEN; connect the servers directly or in session mode, or set FOODSAFE_KEY_CACHE=false")

// proveListening is rule 2's proof: a round trip answered by the backend
// this connection opened (its process id) that listens on keyChannel.
func proveListening(ctx context.Context, conn *pgconn.PgConn) error {
	pid := strconv.FormatUint(uint64(conn.PID()), 10)
	r := conn.ExecParams(ctx,
		"SELECT pg_backend_pid() = $1::int AND $2 = ANY (ARRAY(SELECT pg_listening_channels()))",
		[][]byte{[]byte(pid), []byte(keyChannel)}, nil, nil, nil).Read()
	if r.Err != nil {
		return r.Err
	}
	if len(r.Rows) != 1 || string(r.Rows[0][0]) != "t" {
		return errNotListening
	}
	return nil
}

// keyCommand runs f, a change to keys or grants, in a READ COMMITTED
// transaction (inTxReadCommitted), whose commit the triggers announce,
// and returns keyMaxSilence plus a margin after the commit (rule 4). On
// Citus, where no server caches keys, it returns at once.
func (s *Store) keyCommand(ctx context.Context, f func(q *db.Queries) error) error {
	if err := s.inTxReadCommitted(ctx, f); err != nil {
		return err
	}
	// Not knowing (an error asking), wait as if not on Citus.
	if citus, err := s.onCitus(ctx, s.q); err == nil && citus {
		return nil
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("key change committed, but waiting for every server to drop the old key was cut short: %w", ctx.Err())
	case <-time.After(keyMaxSilence + keyWaitMargin):
		return nil
	}
}
