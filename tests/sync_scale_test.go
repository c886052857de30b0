package tests

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// scaleRestaurants is how many restaurants the scale test's key reads.
const scaleRestaurants = 200

// A key that reads 200 restaurants (24 collections and the deliveries of
// each, 5,000 streams): a foodsafe-sync refresh in which nothing changed
// costs at most 3 requests; after changes in 5 streams of 3 restaurants
// (a delivery that occurred three days ago and was uploaded after the
// previous refresh among them), the grants and one page of the feed of
// what changed, and the mirror equals the server. It logs the database time of
// the listing each refresh asks for (docs/partners-sync.md, "What changed, key-wide").
func TestSyncCostFollowsChange(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := context.Background()
	st := a.store()
	restaurants := make([]string, scaleRestaurants)
	reads := []string{catalog.DeliveriesRead}
	for _, c := range catalog.Collections {
		reads = append(reads, c.ReadScope())
	}
	var grants []auth.Grant
	for i := range restaurants {
		restaurants[i] = fmt.Sprintf("r%03d", i)
		grants = append(grants, grant(restaurants[i], reads...))
	}
	a.addRestaurants(restaurants...)
	key := a.newKey(grants...)
	now := time.Now()
	for _, r := range restaurants {
		for _, c := range catalog.Collections {
			scaleIngest(t, st, r, c.Name, "rec-1", "m-"+r+"-"+c.Name, now)
		}
		scaleDelivery(t, st, r, "d-1", now.Add(-time.Hour))
	}
	target := sqliteTarget(t)
	args := []string{"--api", a.srv.URL, "--to", target, "--json"}
	sync := func(what string) syncEvent {
		r := runSync(t, key, args...)
		require.Equal(t, 0, r.Code, "%s: stderr:\n%s", what, r.Stderr)
		sum := r.summary(t)
		require.Zero(t, sum.Failed, what)
		t.Logf("%-34s %5d requests %5d streams walked %5d pages", what, sum.Requests, sum.Streams, sum.Pages)
		return sum
	}
	first := sync("first sync")
	require.Equal(t, scaleRestaurants*(len(catalog.Collections)+1), first.Streams)

	before, err := st.StreamsHorizon(ctx)
	require.NoError(t, err)
	listingTime(t, st, key, "listing, nothing changed", before)
	noop := sync("refresh, nothing changed")
	require.LessOrEqual(t, noop.Requests, int64(3))
	require.Zero(t, noop.Streams, "no stream walked")

	// 5 streams of 3 restaurants: 150 new areas (two pages), a delivery
	// checked three days ago and uploaded only now, and three others.
	for i := 0; i < 150; i++ {
		scaleIngest(t, st, "r007", "areas", "bulk-"+strconv.Itoa(i), "m-bulk-"+strconv.Itoa(i), now)
	}
	scaleDelivery(t, st, "r007", "d-late", now.Add(-72*time.Hour))
	scaleIngest(t, st, "r100", "products", "rec-1", "m-r100-products-2", now)
	scaleIngest(t, st, "r100", "cooling", "rec-2", "m-r100-cooling-2", now)
	scaleIngest(t, st, "r199", "temperature-records", "rec-1", "m-r199-t-2", now)
	listingTime(t, st, key, "listing, 5 streams changed", before)
	changed := sync("refresh, 5 streams changed")
	require.Equal(t, 5, changed.Streams, "only the changed streams are read")
	require.LessOrEqual(t, changed.Requests, 2+changed.Pages, "the grants plus the pages of what changed")
	require.Equal(t, int64(1), changed.Pages, "154 changes: one page of the feed of what changed")

	db, q := openTarget(t, target)
	var n int
	require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM deliveries WHERE restaurant_id = 'r007' AND id = 'd-late'`)).Scan(&n))
	require.Equal(t, 1, n, "the late upload reached the mirror")
	for _, r := range restaurants {
		requireMirrorEqual(t, a, target, r, targets.TombstoneMark)
	}

	again := sync("refresh after that, nothing changed")
	require.LessOrEqual(t, again.Requests, int64(3))
}

// scaleIngest writes one record straight through the store (the HTTP
// path is not what this test measures).
func scaleIngest(t *testing.T, st *store.Store, restaurant, collection, id, mutation string, at time.Time) {
	t.Helper()
	data := json.RawMessage(`{"name":"` + id + `","isDeleted":false}`)
	sum := sha256.Sum256([]byte(mutation))
	_, _, err := st.RecordIngest(context.Background(), store.Mutation{
		RecordKey:  store.RecordKey{RestaurantID: restaurant, Collection: collection, RecordID: id},
		MutationID: mutation, Data: data, CapturedAt: at.UnixMilli(), PayloadVersion: 1, RequestSHA256: sum[:],
	}, at.UnixMilli())
	require.NoError(t, err)
}

func scaleDelivery(t *testing.T, st *store.Store, restaurant, id string, at time.Time) {
	t.Helper()
	d := wire.Delivery{
		ID: id, RestaurantID: restaurant, OccurredAt: wire.Millis(at.UnixMilli()), IsCompliant: true,
		Supplier: wire.Supplier{ID: "s1", Name: "Supplier"}, TemperatureRecords: []wire.TemperatureRecord{},
		NonComplianceReasons: []string{}, CorrectiveActions: []string{},
	}
	digest, err := d.ContentDigest()
	require.NoError(t, err)
	_, _, err = st.DeliveryCreate(context.Background(), d, digest)
	require.NoError(t, err)
}

// listingTime runs the statements of one GET /v1/changes from position
// since for the key's grants, as the service does, and logs their
// database time (the mean of 20 runs, measured at the store).
func listingTime(t *testing.T, st *store.Store, key, what string, since store.Snapshot) {
	t.Helper()
	ctx := context.Background()
	k, err := st.KeyForAuth(ctx, publicID(t, key))
	require.NoError(t, err)
	// The key's streams as a request holds them: grouped once, when the
	// key is loaded.
	groups := auth.NewPrincipal(k.ID, k.PublicID, k.Grants).Streams().Groups
	const runs = 20
	var heads []store.StreamHead
	start := time.Now()
	for i := 0; i < runs; i++ {
		_, err := st.StreamsHorizon(ctx)
		require.NoError(t, err)
		heads, err = st.StreamsChanged(ctx, store.StreamsChangedParams{Groups: groups, Since: since, Limit: wire.MaxLimit})
		require.NoError(t, err)
	}
	t.Logf("%-34s %d streams listed, %v database time per listing (horizon + streams, mean of %d)", what, len(heads), time.Since(start)/runs, runs)
}
