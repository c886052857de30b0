package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// The key cache saves the key lookup, one of a read's two round trips:
// a server remembers the keys it has authenticated (with their grants)
// and forgets them all whenever any key changes. Revocation stays
// immediate in the spec's sense because of four rules:
//
//  1. Every change is announced on keyChannel when it commits: by the
//     store's key commands (KeyChangeAnnounce, with an id) and by the
//     triggers of migration 00012 (any other edit, payload "*").
//  2. A server uses its cache only while its listening connection is
//     up and was proved alive (a ping answered) less than keyMaxSilence
//     ago; otherwise every request looks its key up, as without a cache.
//     PostgreSQL sends a notification to an idle listener at once and to
//     a busy one before its next ReadyForQuery, so a ping answered proves
//     every change committed before the ping was sent has been heard.
//  3. A lookup fills the cache only if no change was heard since it
//     started (a generation number), so a read that raced a revocation
//     cannot put the old key back.
//  4. The store's key commands return only once every listening server
//     has echoed the change on keyAckChannel, or keyMaxSilence (plus a
//     margin) has passed since the commit, after which rule 2 keeps a
//     server that did not hear it from using what it held. So when
//     `foodsafe keys revoke` returns, no server accepts the key.
//
// On Citus the cache stays off (keys are reference tables whose triggers
// fire on the workers; the coordinator-side guarantee is untested there).
const (
	keyChannel    = "foodsafe_keys"
	keyAckChannel = "foodsafe_keys_ack"
	// keyListenerName is the application_name of the listening
	// connections: key commands find the servers to wait for by it.
	keyListenerName = "foodsafe key listener"
	// keyPingEvery is how often an idle listener proves its connection.
	keyPingEvery = 250 * time.Millisecond
	// keyMaxSilence is how long after its last proof a server still
	// trusts its cache: the bound on a revocation's delay when a
	// listening connection dies silently.
	keyMaxSilence = time.Second
	// keyAckMargin is added to keyMaxSilence when a key command waits.
	keyAckMargin = 100 * time.Millisecond
	// keyCacheMax bounds the cache; beyond it keys are looked up.
	keyCacheMax = 10_000
)

// keyCache is one server's cache of key lookups. Only keys that exist
// are cached: an unknown public id is looked up every time (and such
// requests are throttled per client address).
type keyCache struct {
	mu      sync.Mutex
	entries map[string]*auth.KeyRecord
	// gen changes with every change heard and every listener state
	// change; a fill carries the generation it started under.
	gen  uint64
	live bool
	// proved is when the last ping that succeeded was sent.
	proved time.Time

	hits, misses, bypasses, changes atomic.Uint64
}

// get returns the cached record of publicID (nil when not held), the
// generation to fill under, and whether the cache may be used at all.
func (c *keyCache) get(publicID string, now time.Time) (*auth.KeyRecord, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.usable(now) {
		return nil, 0, false
	}
	return c.entries[publicID], c.gen, true
}

func (c *keyCache) usable(now time.Time) bool {
	return c.live && now.Sub(c.proved) < keyMaxSilence
}

// put caches rec unless anything was heard since gen was read.
func (c *keyCache) put(publicID string, rec *auth.KeyRecord, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.gen != gen || len(c.entries) >= keyCacheMax {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*auth.KeyRecord)
	}
	c.entries[publicID] = rec
}

// forget drops every key: a change was heard.
func (c *keyCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.changes.Add(1)
}

// setLive turns the cache on (the listener has just started listening,
// proved at now) or off (the listener lost its connection). Either way
// what was held is dropped: changes made while nobody listened were not
// heard.
func (c *keyCache) setLive(live bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.live, c.proved = live, now
}

// prove records a ping that was sent at sent and answered.
func (c *keyCache) prove(sent time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.proved = sent
}

func (c *keyCache) stats(now time.Time) metrics.KeyCache {
	c.mu.Lock()
	live, size := c.usable(now), len(c.entries)
	c.mu.Unlock()
	return metrics.KeyCache{Live: live, Size: size, Hits: c.hits.Load(), Misses: c.misses.Load(),
		Bypasses: c.bypasses.Load(), Changes: c.changes.Load()}
}

// KeyCacheStats reads the key cache's state and counters for /metrics.
func (s *Store) KeyCacheStats() metrics.KeyCache { return s.keys.stats(time.Now()) }

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
	var acks []string
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	cfg.RuntimeParams["application_name"] = keyListenerName
	// Runs on this goroutine, inside whichever call reads the message.
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel != keyChannel {
			return
		}
		s.keys.forget()
		if n.Payload != "*" {
			acks = append(acks, n.Payload)
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
	s.keys.setLive(true, time.Now())
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
		err = s.echo(pctx, conn, acks)
		acks = acks[:0]
		if err == nil {
			err = conn.Ping(pctx)
		}
		cancel()
		if err != nil {
			return true, err
		}
		s.keys.prove(sent)
	}
}

// echo answers the key commands whose changes were heard (rule 4).
func (s *Store) echo(ctx context.Context, conn *pgconn.PgConn, ids []string) error {
	pid := strconv.FormatUint(uint64(conn.PID()), 10)
	for _, id := range ids {
		_, err := conn.ExecParams(ctx, "SELECT pg_notify($1, $2)",
			[][]byte{[]byte(keyAckChannel), []byte(id + ":" + pid)}, nil, nil, nil).Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// keyCommand runs f, a change to keys or grants, in a transaction that
// announces it, and returns once every server listening for key changes
// has dropped its cached keys (rule 4). Without listeners it is just the
// transaction.
func (s *Store) keyCommand(ctx context.Context, f func(q *db.Queries) error) error {
	listeners, err := s.q.KeyListenerPids(ctx, keyListenerName)
	if err != nil {
		return translate(err)
	}
	if len(listeners) == 0 {
		return s.inTx(ctx, f)
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	heard := map[string]bool{}
	cfg := s.pool.Config().ConnConfig.Config.Copy()
	cfg.RuntimeParams["application_name"] = "foodsafe key command"
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if who, ok := strings.CutPrefix(n.Payload, id+":"); ok && n.Channel == keyAckChannel {
			heard[who] = true
		}
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return translate(err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+keyAckChannel).ReadAll(); err != nil {
		return translate(err)
	}
	if err := s.inTx(ctx, func(q *db.Queries) error {
		if err := f(q); err != nil {
			return err
		}
		return q.KeyChangeAnnounce(ctx, id)
	}); err != nil {
		return err
	}
	// Committed. A listener that does not answer by the deadline stopped
	// trusting its cache by then (rule 2).
	deadline := time.Now().Add(keyMaxSilence + keyAckMargin)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for !allHeard(listeners, heard) {
		err := conn.WaitForNotification(wctx)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("key change committed, but waiting for the servers to drop the old key was cut short: %w", ctx.Err())
		case wctx.Err() != nil:
			return nil
		case err != nil:
			// Without the echoes, the deadline alone is the guarantee.
			<-wctx.Done()
			if ctx.Err() != nil {
				return fmt.Errorf("key change committed, but waiting for the servers to drop the old key was cut short: %w", ctx.Err())
			}
			return nil
		}
	}
	return nil
}

func allHeard(pids []*int32, heard map[string]bool) bool {
	for _, p := range pids {
		if p != nil && !heard[strconv.Itoa(int(*p))] {
			return false
		}
	}
	return true
}
