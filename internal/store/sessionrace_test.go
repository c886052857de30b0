package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A token opened while a `keys ungrant` is in flight, from the key as it
// was read before, waits for the ungrant and is then refused: stored
// after the ungrant deleted the tokens carrying the grant, it would
// escape that deletion and work again once the grant is restored. The
// ungrant stands here as its statements, in a transaction the test
// commits once the token's transaction waits for the key's lock; before
// the lock, the token was stored at once and outlived the ungrant.
func TestSessionOpenedDuringAnUngrantIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	rw := []string{"areas:read", "areas:write"}
	s, conn, issued := storeWithKey(t, url, auth.Grant{RestaurantID: "r1", Scopes: rw}, auth.Grant{RestaurantID: "r2", Scopes: rw})
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(ctx) })
	var keyID int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, issued.PublicID).Scan(&keyID))

	for _, c := range []struct {
		name, ungrant string
		want          apperr.Code
	}{
		{"a scope", `DELETE FROM key_grants WHERE key_id = $1 AND restaurant_id = 'r1' AND scope = 'areas:write'`, apperr.Forbidden},
		{"a restaurant", `DELETE FROM key_grants WHERE key_id = $1 AND restaurant_id = 'r2'`, apperr.NotFound},
	} {
		// The key's grants as the request read them, before the ungrant.
		stale := []auth.Grant{{RestaurantID: "r1", Scopes: rw}, {RestaurantID: "r2", Scopes: rw}}
		tx := readCommitted(t, conn)
		_, err = tx.Exec(ctx, c.ungrant, keyID)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `DELETE FROM mobile_sessions WHERE key_id = $1`, keyID) // SessionDeleteCarrying
		require.NoError(t, err)

		done := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			done <- s.SessionCreate(cctx, keyID, auth.NewToken(), time.Now().Add(time.Hour), stale)
		}()
		deadline := time.Now().Add(30 * time.Second)
		for waiting := 0; waiting == 0; {
			select {
			case err := <-done:
				_ = tx.Rollback(ctx)
				t.Fatalf("%s: the token was opened while the ungrant was in flight, without waiting for it (err %v)", c.name, err)
			default:
			}
			require.NoError(t, other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SessionKeyShare%'`).Scan(&waiting))
			require.True(t, time.Now().Before(deadline), "%s: the token's transaction never waited for the key's lock", c.name)
			time.Sleep(10 * time.Millisecond)
		}
		require.NoError(t, tx.Commit(ctx))
		err = <-done
		require.True(t, apperr.Is(err, c.want), "%s: %v", c.name, err)
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM mobile_sessions WHERE key_id = $1`, keyID).Scan(&n))
		require.Zero(t, n, "%s: no token outlives the ungrant", c.name)
	}
}

// A key without a summary (deleted by a change by hand) is checked grant
// by grant: what it holds opens a token, a scope or a restaurant it lacks
// does not.
func TestSessionCheckedAgainstAKeyWithoutSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	s, conn, issued := storeWithKey(t, url, auth.Grant{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write"}},
		auth.Grant{RestaurantID: "r2", Scopes: []string{"areas:read"}})
	var keyID int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, issued.PublicID).Scan(&keyID))
	_, err := conn.Exec(ctx, `DELETE FROM key_grant_sets WHERE key_id = $1`, keyID)
	require.NoError(t, err)
	open := func(g ...auth.Grant) error {
		return s.SessionCreate(ctx, keyID, auth.NewToken(), time.Now().Add(time.Hour), g)
	}
	require.NoError(t, open(auth.Grant{RestaurantID: "r1", Scopes: []string{"areas:write", "areas:read"}},
		auth.Grant{RestaurantID: "r2", Scopes: []string{"areas:read"}}))
	require.True(t, apperr.Is(open(auth.Grant{RestaurantID: "r2", Scopes: []string{"areas:read", "areas:write"}}), apperr.Forbidden))
	require.True(t, apperr.Is(open(auth.Grant{RestaurantID: "r1", Scopes: []string{"areas:read"}},
		auth.Grant{RestaurantID: "r3", Scopes: []string{"areas:read"}}), apperr.NotFound))
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM mobile_sessions WHERE key_id = $1`, keyID).Scan(&n))
	require.Equal(t, 1, n, "only the token of grants the key holds")
}
