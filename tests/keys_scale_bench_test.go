package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// BenchmarkLargeKey: what a key of 20,000 restaurants
// (FOODSAFE_LARGE_KEY_RESTAURANTS) holding the 25 read scopes of
// streams on each costs, beside a store with 25 streams per restaurant,
// on tables never ANALYZEd, then ANALYZEd:
//
//   - create: `keys create` of the whole key (the store's batched inserts);
//   - first-request: the key's lookup (KeyAuthLookup) and the principal
//     made once from it (auth.KeyRecord.Index): what the first request of
//     the key costs beyond its own work; cached-bytes is the heap the
//     record and its principal keep (what the key cache holds);
//   - session-request: what every request made with a session token of
//     the key, carrying one restaurant's scopes, costs to authenticate
//     (SessionForAuth and the token's check; tokens are never cached);
//   - whole-session-create: POST /v1/mobile/sessions without restaurantId
//     as the store sees it (SessionCreate with every grant of the key);
//   - whole-session-request: what every request made with that token, which
//     carries all of the key's grants, costs to authenticate;
//   - rebuild: foodsafe_key_grant_sets_rebuild of the key, what the key
//     commands add to their transaction and migration 00043 costs per key;
//   - poll: a GET /v1/changes page from the position a full listing
//     handed back, nothing changed since;
//   - page: a page of 100 of the full listing, from the middle;
//   - full-listing: every page of the full listing (pages/op);
//   - restaurants-identity, -gzip, -zstd: GET /v1/restaurants over HTTP,
//     in process, with that Accept-Encoding (bytes/answer).
func BenchmarkLargeKey(b *testing.B) {
	n := 20_000
	if s := os.Getenv("FOODSAFE_LARGE_KEY_RESTAURANTS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err, "FOODSAFE_LARGE_KEY_RESTAURANTS")
	}
	ctx := context.Background()
	dbURL := testdb.URL(b)
	st, err := store.Open(ctx, dbURL)
	require.NoError(b, err)
	b.Cleanup(st.Close)

	var reads []string
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			reads = append(reads, s)
		}
	}
	streams := []string{catalog.DeliveryStream}
	for _, c := range catalog.Collections {
		streams = append(streams, c.Name)
	}
	ids := make([]string, n)
	grants := make([]auth.Grant, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%06d", i)
		grants[i] = auth.Grant{RestaurantID: ids[i], Scopes: reads}
	}
	start := time.Now()
	_, err = st.Pool().Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(b, err)
	_, err = st.Pool().Exec(ctx, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence, changed_xact, max_record_bytes)
		SELECT r, s, 10, 1, 0 FROM unnest($1::text[]) r, unnest($2::text[]) s`, ids, streams)
	require.NoError(b, err)
	issued := auth.NewKey()
	_, err = st.KeyCreate(ctx, issued, "large", nil, grants)
	require.NoError(b, err)
	b.Logf("%d restaurants x %d scopes and %d streams seeded in %s", n, len(reads), n*len(streams), time.Since(start).Round(time.Second))

	var keyID int64
	require.NoError(b, st.Pool().QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, issued.PublicID).Scan(&keyID))
	token := auth.NewToken()
	require.NoError(b, st.SessionCreate(ctx, keyID, token, time.Now().Add(24*time.Hour), grants[n/2:n/2+1]))
	tokenCred, ok := auth.ParseCredential(token.Full)
	require.True(b, ok)
	whole := auth.NewToken()
	require.NoError(b, st.SessionCreate(ctx, keyID, whole, time.Now().Add(24*time.Hour), grants))
	wholeCred, ok := auth.ParseCredential(whole.Full)
	require.True(b, ok)

	a := newApp(b, withDatabaseURL(dbURL))
	for _, stats := range []string{"never-analyzed", "analyzed"} {
		if stats == "analyzed" {
			analyze(b, dbURL)
		}
		b.Run(stats+"/create", func(b *testing.B) {
			for b.Loop() {
				_, err := st.KeyCreate(ctx, auth.NewKey(), "large", nil, grants)
				require.NoError(b, err)
			}
		})
		cred, ok := auth.ParseCredential(issued.Full)
		require.True(b, ok)
		lookup := func() (*auth.KeyRecord, *auth.Principal) {
			// st has no key cache: every lookup is the first.
			rec, err := st.KeyForAuth(ctx, issued.PublicID)
			require.NoError(b, err)
			rec.Index()
			p, reason := rec.Check(cred, time.Now())
			require.Empty(b, reason)
			return rec, p
		}
		first := func() *auth.Principal { _, p := lookup(); return p }
		groups := first().Streams().Groups
		require.Len(b, groups, 1)
		// Nothing changes after this position.
		since, err := st.StreamsHorizon(ctx)
		require.NoError(b, err)
		b.Run(stats+"/first-request", func(b *testing.B) {
			for b.Loop() {
				first()
			}
			// What the key cache holds for the key: the record with its
			// principal (heap growth across one lookup kept alive).
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			rec, _ := lookup()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(rec)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "cached-bytes")
		})
		b.Run(stats+"/session-request", func(b *testing.B) {
			for b.Loop() {
				s, err := st.SessionForAuth(ctx, token.PublicID)
				require.NoError(b, err)
				p, reason := s.Check(tokenCred, time.Now())
				require.Empty(b, reason)
				require.Equal(b, 1, p.Restaurants())
			}
		})
		b.Run(stats+"/whole-session-create", func(b *testing.B) {
			for b.Loop() {
				require.NoError(b, st.SessionCreate(ctx, keyID, auth.NewToken(), time.Now().Add(24*time.Hour), grants))
			}
		})
		b.Run(stats+"/whole-session-request", func(b *testing.B) {
			for b.Loop() {
				s, err := st.SessionForAuth(ctx, whole.PublicID)
				require.NoError(b, err)
				p, reason := s.Check(wholeCred, time.Now())
				require.Empty(b, reason)
				require.Equal(b, n, p.Restaurants())
			}
		})
		b.Run(stats+"/rebuild", func(b *testing.B) {
			for b.Loop() {
				_, err := st.Pool().Exec(ctx, `SELECT foodsafe_key_grant_sets_rebuild(id) FROM api_keys WHERE public_id = $1`,
					issued.PublicID)
				require.NoError(b, err)
			}
		})
		b.Run(stats+"/full-listing", func(b *testing.B) {
			pages := 0
			for b.Loop() {
				p := store.StreamsChangedParams{Groups: groups, Limit: wire.MaxLimit}
				for pages = 1; ; pages++ {
					heads, err := st.StreamsChanged(ctx, p)
					require.NoError(b, err)
					if len(heads) <= p.Limit {
						break
					}
					last := heads[p.Limit-1]
					p.AfterRestaurant, p.AfterStream = last.RestaurantID, last.Stream
				}
			}
			b.ReportMetric(float64(pages), "pages/op")
		})
		b.Run(stats+"/poll", func(b *testing.B) {
			for b.Loop() {
				_, err := st.StreamsHorizon(ctx)
				require.NoError(b, err)
				heads, err := st.StreamsChanged(ctx, store.StreamsChangedParams{Groups: groups, Since: since, Limit: wire.MaxLimit})
				require.NoError(b, err)
				require.Empty(b, heads)
			}
		})
		b.Run(stats+"/page", func(b *testing.B) {
			for b.Loop() {
				heads, err := st.StreamsChanged(ctx, store.StreamsChangedParams{Groups: groups, Limit: wire.MaxLimit,
					AfterRestaurant: ids[n/2], AfterStream: "areas"})
				require.NoError(b, err)
				require.Len(b, heads, wire.MaxLimit+1)
			}
		})
		for _, coding := range []string{"identity", "gzip", "zstd"} {
			b.Run(stats+"/restaurants-"+coding, func(b *testing.B) {
				size := 0
				for b.Loop() {
					r, err := http.NewRequest(http.MethodGet, a.srv.URL+"/v1/restaurants", nil)
					require.NoError(b, err)
					r.Header.Set("Authorization", "Bearer "+issued.Full)
					r.Header.Set("Accept-Encoding", coding)
					res, err := a.srv.Client().Do(r)
					require.NoError(b, err)
					body, err := io.ReadAll(res.Body)
					res.Body.Close()
					require.NoError(b, err)
					require.Equal(b, http.StatusOK, res.StatusCode)
					if coding != "identity" {
						require.Equal(b, coding, res.Header.Get("Content-Encoding"))
					}
					size = len(body)
				}
				b.ReportMetric(float64(size), "bytes/answer")
			})
		}
	}
}
