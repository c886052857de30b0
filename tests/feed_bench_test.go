package tests

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store"
)

// firstSyncCollections are five collections whose records are a name:
// the first sync's fixture writes one record to each.
var firstSyncCollections = []string{"areas", "cooking-equipment", "fryer-equipment", "products", "suppliers"}

// seedFirstSync enables restaurants r0000... and writes one record to
// each of firstSyncCollections there, through the store's ingest; it
// returns a key reading them all.
func seedFirstSync(t testing.TB, a *app, restaurants int) string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, restaurants)
	grants := make([]auth.Grant, restaurants)
	var reads []string
	for _, c := range firstSyncCollections {
		reads = append(reads, c+":read")
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("r%04d", i)
		grants[i] = grant(ids[i], reads...)
	}
	a.addRestaurants(ids...)
	now := time.Now().UnixMilli()
	for _, r := range ids {
		for _, c := range firstSyncCollections {
			m := "m-" + r + "-" + c
			digest := sha256.Sum256([]byte(m))
			_, _, err := a.store().RecordIngest(ctx, store.Mutation{RecordKey: store.RecordKey{RestaurantID: r, Collection: c, RecordID: "x1"},
				MutationID: m, Data: json.RawMessage(`{"name":"First","isDeleted":false}`), CapturedAt: now, PayloadVersion: 1,
				RequestSHA256: digest[:]}, now)
			require.NoError(t, err)
		}
	}
	return a.newKey(grants...)
}

// firstSync reads every record key reads, as a client's first sync does,
// and returns the requests it took and the records it read: through the
// records feed (pages of 500), or the way before it, a GET /v1/changes
// listing (pages of 100) then a walk of each stream listed (pages of 100).
func firstSync(t testing.TB, a *app, key string, feed bool) (requests, records int) {
	t.Helper()
	get := func(path string, v any) {
		r, err := http.NewRequest(http.MethodGet, a.srv.URL+path, nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+key)
		res, err := a.srv.Client().Do(r)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		require.NoError(t, json.Unmarshal(body, v))
		requests++
	}
	page := func(path, cursor string) string {
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		return path
	}
	if feed {
		cursor := ""
		for {
			var p feedPageDoc
			get(page("/v1/records?limit=500", cursor), &p)
			records += len(p.Data)
			if p.NextCursor == nil {
				return requests, records
			}
			cursor = *p.NextCursor
		}
	}
	var streams []streamChange
	for cursor := ""; ; {
		var p streamChangesDoc
		get(page("/v1/changes?limit=100", cursor), &p)
		streams = append(streams, p.Data...)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	for _, s := range streams {
		for cursor := ""; ; {
			var p walkPage
			get(page(recordsPath(s.RestaurantID, s.Stream)+"?limit=100", cursor), &p)
			records += len(p.Data)
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
	}
	return requests, records
}

// A first sync of 400 restaurants x 5 collections, one record each (2,000
// records), costs the records feed 4 requests of 500 records; the listing
// and a walk per stream cost 2,020.
func TestRecordFeedFirstSyncCostsItsRecords(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	key := seedFirstSync(t, a, 400)
	requests, records := firstSync(t, a, key, true)
	require.Equal(t, 2000, records)
	require.Equal(t, 4, requests, "pages of 500 records")
	requests, records = firstSync(t, a, key, false)
	require.Equal(t, 2000, records)
	require.Equal(t, 2020, requests, "20 listing pages and 2,000 walks")
}

// BenchmarkFirstSync: the requests and time of a first read of every
// record of a key of FOODSAFE_FIRST_SYNC_RESTAURANTS restaurants (400 by
// default) x 5 collections x 1 record, over HTTP in process: through the
// records feed (feed) and through a GET /v1/changes listing and a walk per
// stream (walks). Tables ANALYZEd after seeding.
func BenchmarkFirstSync(b *testing.B) {
	n := 400
	if s := os.Getenv("FOODSAFE_FIRST_SYNC_RESTAURANTS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err, "FOODSAFE_FIRST_SYNC_RESTAURANTS")
	}
	a := newApp(b)
	key := seedFirstSync(b, a, n)
	_, err := a.store().Pool().Exec(context.Background(), "ANALYZE")
	require.NoError(b, err)
	for _, way := range []string{"feed", "walks"} {
		b.Run(way, func(b *testing.B) {
			requests, records := 0, 0
			for b.Loop() {
				requests, records = firstSync(b, a, key, way == "feed")
			}
			require.Equal(b, n*len(firstSyncCollections), records)
			b.ReportMetric(float64(requests), "requests/op")
			b.ReportMetric(float64(records), "records/op")
		})
	}
}
