package tests

import (
	"bytes"
	"context"
	"net/url"
	"strings"
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
	a := newApp(t)
	restaurants := seedFeed(t, a, 400, 5, 1)
	now := time.Now()
	for _, r := range restaurants[:100] {
		scaleDelivery(t, a.store(), r, "d-0", now.Add(-time.Hour))
	}
	key := a.newKey(feedGrants(restaurants, 5, true)...)
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
