package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store"
)

// grant builds a grant for test setup.
func grant(restaurant string, scopes ...string) auth.Grant {
	return auth.Grant{RestaurantID: restaurant, Scopes: scopes}
}

// addRestaurants enables restaurants in the app's database, with capture
// enabled since the epoch so any test timestamp counts as captured after.
func (a *app) addRestaurants(ids ...string) {
	a.t.Helper()
	epoch := time.UnixMilli(0)
	for _, id := range ids {
		_, err := a.store().RestaurantAdd(context.Background(), id, store.RestaurantChange{EnabledAt: &epoch})
		require.NoError(a.t, err)
	}
}

// newKey issues a key with grants and returns the full key text.
func (a *app) newKey(grants ...auth.Grant) string {
	a.t.Helper()
	return a.newKeyExpiring(nil, grants...)
}

func (a *app) newKeyExpiring(expires *time.Time, grants ...auth.Grant) string {
	a.t.Helper()
	issued := auth.NewKey()
	_, err := a.store().KeyCreate(context.Background(), issued, "test key", expires, grants)
	require.NoError(a.t, err)
	return issued.Full
}

// refusedKeys are a good key of restaurant r1 (deliveries:read) and one
// credential for each way a key is refused: revoked, expired, left
// without grants, and the good key with a wrong secret.
type refusedKeys struct {
	good, revoked, expired, noGrants, wrongSecret string
}

// newRefusedKeys issues the keys of refusedKeys; r1 must exist.
func (a *app) newRefusedKeys() refusedKeys {
	a.t.Helper()
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	k := refusedKeys{
		good:     a.newKey(grant("r1", "deliveries:read")),
		revoked:  a.newKey(grant("r1", "deliveries:read")),
		expired:  a.newKeyExpiring(&past, grant("r1", "deliveries:read")),
		noGrants: a.newKey(grant("r1", "deliveries:read")),
	}
	_, err := a.store().KeyRevoke(ctx, publicID(a.t, k.revoked))
	require.NoError(a.t, err)
	_, err = a.store().KeyUngrant(ctx, publicID(a.t, k.noGrants), auth.Grant{RestaurantID: "r1"})
	require.NoError(a.t, err)
	k.wrongSecret = k.good[:len(k.good)-4] + "AAAA"
	if k.wrongSecret == k.good {
		k.wrongSecret = k.good[:len(k.good)-4] + "BBBB"
	}
	return k
}

// publicID is the public half of a full key.
func publicID(t testing.TB, key string) string {
	t.Helper()
	c, ok := auth.ParseCredential(key)
	require.True(t, ok, "well-formed key")
	return c.PublicID
}

// secretOf is the secret half of a full key, to prove it never leaks.
func secretOf(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '.' {
			return key[i+1:]
		}
	}
	return ""
}

// getAs sends a GET with the key as bearer credential.
func (a *app) getAs(key, path string, kv ...string) response {
	a.t.Helper()
	return a.get(path, append([]string{"Authorization", "Bearer " + key}, kv...)...)
}
