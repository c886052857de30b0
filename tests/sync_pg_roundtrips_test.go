package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A first sync into PostgreSQL costs the target a bounded number of
// transactions per page of the feed, whatever the streams a page ends:
// with 400 restaurants × 5 collections and their deliveries (2,400
// streams, 6 pages of the feed), at most 3 per page and 100 besides, as
// pg_stat_database counts them (each statement outside a transaction is
// one). Before, each stream a page touched cost a transaction of its own
// (its state read outside the page's).
func TestSyncPostgresTargetTransactionsPerPage(t *testing.T) {
	t.Parallel()
	a, key, restaurants := feedOf400Restaurants(t, 1)
	proxy := newCountingProxy(t, a.srv.URL)
	target := testdb.EmptyURL(t)

	var logs bytes.Buffer
	_, sum, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, byPath, _ := proxy.take(t)
	pages := byPath["/v1/records"]
	commits := targetCommits(t, target)
	t.Logf("first sync into PostgreSQL: %d streams, %d pages of the feed, %d transactions of the target", sum.Streams, pages, commits)
	require.Equal(t, 2100, sum.Streams)
	require.LessOrEqual(t, commits, int64(3*pages+100))
	for _, r := range []string{restaurants[0], restaurants[99], restaurants[399]} {
		requireMirrorEqual(t, a, target, r, 0, feedCollections(5)...)
	}
}

// targetCommits is the transactions committed in the target's database
// once the sync's connections are gone (each flushes its counts as it
// ends), less this query's own.
func targetCommits(t testing.TB, target string) int64 {
	t.Helper()
	ctx := context.Background()
	u, err := url.Parse(target)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	conn, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n, last int64 = 0, -1
	for range 50 {
		require.NoError(t, conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, name).Scan(&n))
		var others int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&others))
		if others == 0 && n == last {
			return n
		}
		last = n
		time.Sleep(100 * time.Millisecond)
	}
	return n
}

// A first sync into PostgreSQL writes a page of the feed in a bounded
// number of round trips, whatever the streams it brings: with 400
// restaurants × 5 collections of 2 records and 100 deliveries (pages of
// 500 items, about 250 streams each), no transaction of the target costs
// more than 60 round trips, counted on the wire (a Sync or a simple
// Query sent by the client: each waits for the server's answer). Before,
// each stream of a page cost its own statements (its records' upsert, its
// typed rows' deletes and inserts, its deliveries), about 1,000 round
// trips for such a page.
func TestSyncPostgresTargetRoundTripsPerPage(t *testing.T) {
	t.Parallel()
	a, key, restaurants := feedOf400Restaurants(t, 2)
	proxy := newCountingProxy(t, a.srv.URL)
	target := testdb.EmptyURL(t)
	pgw := newPGWireCounter(t, target)

	var logs bytes.Buffer
	_, sum, err := inProcessSync(context.Background(), t, proxy.URL, key, pgw.url, &logs)
	require.NoError(t, err, logs.String())
	_, byPath, _ := proxy.take(t)
	pages := byPath["/v1/records"]
	txs := pgw.transactions()
	t.Logf("first sync into PostgreSQL: %d streams, %d pages of the feed, %d transactions of the target, round trips of each: %v",
		sum.Streams, pages, len(txs), txs)
	require.Equal(t, 2100, sum.Streams)
	require.Equal(t, int64(4000), sum.Records)
	require.GreaterOrEqual(t, pages, 4, "pages of many streams each")
	require.LessOrEqual(t, slices.Max(txs), 60, "round trips of the costliest transaction")
	for _, r := range []string{restaurants[0], restaurants[99], restaurants[399]} {
		requireMirrorEqual(t, a, target, r, 0, feedCollections(5)...)
	}
}

// pgWireCounter is a TCP proxy in front of a PostgreSQL server that
// counts, per transaction of each connection, the client's round trips:
// its Sync messages (the end of an extended-protocol exchange) and its
// simple Query messages (BEGIN and COMMIT among them). Transactions that
// change the schema (a collection's table and typed relations, made once
// per collection before its first page) are left out: what is counted
// is the pages'.
type pgWireCounter struct {
	url  string
	mu   sync.Mutex
	done []int // round trips of each transaction (not DDL) committed or rolled back
}

func newPGWireCounter(t *testing.T, target string) *pgWireCounter {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	upstream := u.Host
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	u.Host = l.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable") // the proxy reads the protocol in the clear
	u.RawQuery = q.Encode()
	c := &pgWireCounter{url: u.String()}
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", upstream)
			if err != nil {
				client.Close()
				continue
			}
			go func() { _, _ = io.Copy(client, server); client.Close() }()
			go func() { c.relay(client, server); server.Close() }()
		}
	}()
	return c
}

// relay copies the client's messages to the server, counting them.
func (c *pgWireCounter) relay(client io.Reader, server io.Writer) {
	r := bufio.NewReader(client)
	// The startup message has no type byte; an SSL or GSS request (refused
	// by sslmode=disable, but answered first) is followed by another.
	for {
		msg, err := readN(r, 0)
		if err != nil || writeAll(server, msg) != nil {
			return
		}
		if code := binary.BigEndian.Uint32(msg[4:8]); code != 80877103 && code != 80877104 {
			break
		}
	}
	inTx, ddl, trips := false, false, 0
	for {
		typ, err := r.ReadByte()
		if err != nil {
			return
		}
		msg, err := readN(r, typ)
		if err != nil || writeAll(server, msg) != nil {
			return
		}
		switch typ {
		case 'Q':
			text := strings.ToLower(strings.TrimSpace(strings.TrimRight(string(msg[5:]), "\x00")))
			trips++
			switch {
			case strings.HasPrefix(text, "begin"):
				inTx, ddl, trips = true, false, 1
			case inTx && (strings.HasPrefix(text, "commit") || strings.HasPrefix(text, "rollback")):
				if !ddl {
					c.mu.Lock()
					c.done = append(c.done, trips)
					c.mu.Unlock()
				}
				inTx = false
			case slices.ContainsFunc([]string{"create", "comment", "alter", "drop"}, func(p string) bool { return strings.HasPrefix(text, p) }):
				ddl = true
			}
		case 'S':
			trips++
		}
	}
}

func writeAll(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

// readN reads one message whose type byte (0: none) was read already, and
// returns it whole, type byte included.
func readN(r *bufio.Reader, typ byte) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[:])
	if n < 4 || n > 1<<30 {
		return nil, fmt.Errorf("a message of %d bytes", n)
	}
	var msg []byte
	if typ != 0 {
		msg = append(msg, typ)
	}
	msg = append(msg, head[:]...)
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return append(msg, body...), nil
}

// transactions is the round trips of each transaction the proxy saw end.
func (c *pgWireCounter) transactions() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.done)
}

// feedOf400Restaurants seeds the feed the round-trip tests sync: 400
// restaurants × 5 collections of perStream records each, a delivery on
// the first 100, and a key reading all of it; it returns the restaurants too.
func feedOf400Restaurants(t *testing.T, perStream int) (*app, string, []string) {
	t.Helper()
	a := newApp(t)
	restaurants := seedFeed(t, a, 400, 5, perStream)
	now := time.Now()
	for _, r := range restaurants[:100] {
		scaleDelivery(t, a.store(), r, "d-0", now.Add(-time.Hour))
	}
	return a, a.newKey(feedGrants(restaurants, 5, true)...), restaurants
}
