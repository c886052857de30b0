package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/store"
)

// An incremental run catches up through the feed of what changed
// (GET /v1/records?since=): after 2,000 writes scattered over 100
// restaurants (new records, updates, tombstones and deliveries in about
// 550 streams), the next run costs at most 40 requests (a walk per changed
// stream cost about 600) and the mirror equals the server record by
// record, deliveries included. A catch-up stopped after its second page
// resumes from its kept cursor; a grant given afterwards makes the kept
// position useless to the feed (refused), and the run lists the changed
// streams instead, ending exact again.
func TestSyncCatchUpThroughTheFeed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	const collections = 5
	restaurants := seedFeed(t, a, 100, collections, 2)
	now := time.Now()
	for _, r := range restaurants {
		scaleDelivery(t, a.store(), r, "d-0", now.Add(-time.Hour))
	}
	key := a.newKey(feedGrants(restaurants, collections, true)...)
	proxy := newCountingProxy(t, a.srv.URL)
	target := sqliteTarget(t)
	var logs bytes.Buffer
	_, _, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	proxy.take(t)

	scatter := func(seed uint64, n int) {
		rng := rand.New(rand.NewPCG(seed, 2))
		for i := range n {
			r := restaurants[rng.IntN(len(restaurants))]
			c := catalog.Collections[rng.IntN(collections)].Name
			m := fmt.Sprintf("m-%d-%d", seed, i)
			switch k := rng.IntN(10); {
			case k < 4: // a new record
				scaleIngest(t, a.store(), r, c, fmt.Sprintf("new-%d-%d", seed, i), m, now)
			case k < 7: // an update of one the first sync brought
				scaleIngest(t, a.store(), r, c, fmt.Sprintf("rec-%d", rng.IntN(2)), m, now)
			case k < 9: // a tombstone
				catchUpTombstone(t, a.store(), r, c, fmt.Sprintf("rec-%d", rng.IntN(2)), m, now)
			default: // a delivery, received now whenever it occurred
				scaleDelivery(t, a.store(), r, fmt.Sprintf("d-%d-%d", seed, i), now.Add(-time.Duration(rng.IntN(96))*time.Hour))
			}
		}
	}
	requireExact := func(what string) {
		t.Helper()
		for _, r := range restaurants {
			requireMirrorEqual(t, a, target, r, targets.TombstoneMark, feedCollections(collections)...)
		}
		requireDeliveriesEqual(t, a, target, what)
	}

	scatter(1, 2000)
	_, sum, err := inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	requests, byPath, feed := proxy.take(t)
	t.Logf("catch-up after 2,000 scattered writes: %d requests (%d of GET /v1/records), %d streams ended, %d records, %d deliveries",
		requests, byPath["/v1/records"], sum.Streams, sum.Records, sum.Deliveries)
	require.LessOrEqual(t, requests, 40)
	require.Equal(t, int64(requests), sum.Requests)
	require.Greater(t, sum.Streams, 400, "hundreds of streams changed")
	require.NotEmpty(t, feed)
	requireExact("after the catch-up")

	// Stopped after its second page, the catch-up resumes from its cursor.
	scatter(2, 1500)
	next := interruptFirstSync(t, proxy, key, target, &logs)
	require.Contains(t, next, "resumes")
	_, _, first := proxy.take(t)
	require.Len(t, first, 2)
	_, _, err = inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	_, _, second := proxy.take(t)
	require.NotEmpty(t, second)
	require.NotEmpty(t, second[0], "the next run resumes the catch-up from its kept cursor")
	require.Contains(t, logs.String(), "resuming the catch-up")
	requireExact("after a resumed catch-up")

	// A grant given: the position predates it, the feed refuses it, and
	// the run lists the changed streams (the listing starts over).
	a.addRestaurants("r-new")
	scaleIngest(t, a.store(), "r-new", catalog.Collections[0].Name, "rec-0", "m-r-new", now)
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, key), []auth.Grant{grant("r-new", catalog.Collections[0].ReadScope())}))
	scatter(3, 50)
	_, _, err = inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	require.Contains(t, logs.String(), "listing the changed streams instead")
	requests, _, _ = proxy.take(t)
	t.Logf("after a grant change, listing the changed streams: %d requests", requests)
	requireMirrorEqual(t, a, target, "r-new", targets.TombstoneMark, catalog.Collections[0].Name)
	requireExact("after a grant change")

	// And the run after it catches up through the feed again.
	scatter(4, 100)
	_, _, err = inProcessSync(context.Background(), t, proxy.URL, key, target, &logs)
	require.NoError(t, err, logs.String())
	requests, byPath, _ = proxy.take(t)
	require.Positive(t, byPath["/v1/records"])
	require.LessOrEqual(t, requests, 4)
	requireExact("after the grant change's next run")
}

// catchUpTombstone deletes a record through the store.
func catchUpTombstone(t *testing.T, st *store.Store, restaurant, collection, id, mutation string, at time.Time) {
	t.Helper()
	sum := sha256.Sum256([]byte(mutation))
	_, _, err := st.RecordIngest(context.Background(), store.Mutation{
		RecordKey:  store.RecordKey{RestaurantID: restaurant, Collection: collection, RecordID: id},
		MutationID: mutation, Deleted: true, CapturedAt: at.UnixMilli(), PayloadVersion: 1, RequestSHA256: sum[:],
	}, at.UnixMilli())
	require.NoError(t, err)
}

// requireDeliveriesEqual compares every delivery id of the server with
// the mirror's.
func requireDeliveriesEqual(t testing.TB, a *app, target, what string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT restaurant_id || '/' || id FROM deliveries ORDER BY 1`)
	require.NoError(t, err)
	server, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	db, _ := openTarget(t, target)
	mrows, err := db.Query(`SELECT restaurant_id || '/' || id FROM deliveries ORDER BY 1`)
	require.NoError(t, err)
	defer mrows.Close()
	var got []string
	for mrows.Next() {
		var s string
		require.NoError(t, mrows.Scan(&s))
		got = append(got, s)
	}
	require.NoError(t, mrows.Err())
	require.Equal(t, server, got, what)
}
