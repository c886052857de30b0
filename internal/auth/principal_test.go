package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Grants are indexed by restaurant with scopes sorted and unique, however
// they arrive (a key's grant rows, split over several entries).
func TestPrincipalIndexesGrants(t *testing.T) {
	p := NewPrincipal(7, "pub", []Grant{
		{RestaurantID: "r2", Scopes: []string{"areas:read"}},
		{RestaurantID: "r1", Scopes: []string{"users:read", "areas:read"}},
		{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write"}},
	})
	require.True(t, p.HasRestaurant("r1"))
	require.False(t, p.HasRestaurant("r3"))
	require.True(t, p.Can("r1", "areas:write"))
	require.False(t, p.Can("r2", "areas:write"), "scopes do not leak across restaurants")
	require.False(t, p.Can("r3", "areas:read"))
	require.Equal(t, []string{"areas:read", "areas:write", "users:read"}, p.Scopes("r1"))
	require.Equal(t, []Grant{
		{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write", "users:read"}},
		{RestaurantID: "r2", Scopes: []string{"areas:read"}},
	}, p.Grants())
	require.False(t, p.Empty())
	require.True(t, NewPrincipal(1, "pub", nil).Empty())

	// Callers get copies: changing them changes nothing of the principal.
	p.Scopes("r1")[0] = "x"
	p.Grants()[0].Scopes[0] = "x"
	require.True(t, p.Can("r1", "areas:read"))
}

// Revocation wins over expiry, expiry over a key without grants; each
// takes effect at its instant, not after.
func TestKeyState(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	before, after := now.Add(-time.Second), now.Add(time.Second)
	for _, c := range []struct {
		name             string
		revoked, expires *time.Time
		grants           int
		want             Reason
	}{
		{"live", nil, nil, 1, ""},
		{"revoked", &before, nil, 1, ReasonRevoked},
		{"revoked at this instant", &now, nil, 1, ReasonRevoked},
		{"revocation to come", &after, nil, 1, ""},
		{"expired", nil, &before, 1, ReasonExpired},
		{"expires at this instant", nil, &now, 1, ReasonExpired},
		{"expires later", nil, &after, 1, ""},
		{"revoked and expired", &before, &before, 1, ReasonRevoked},
		{"no grants", nil, nil, 0, ReasonNoGrants},
		{"expired without grants", nil, &before, 0, ReasonExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, KeyState(c.revoked, c.expires, c.grants, now))
		})
	}
}

// An indexed record answers the principal a fresh check builds, one
// shared principal for every check, and refuses what it refused before:
// the wrong secret, and a key revoked or expired at the time of the check.
func TestIndexedKeyRecordChecksAsBefore(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	issued := NewKey()
	cred, ok := ParseCredential(issued.Full)
	require.True(t, ok)
	other, _ := ParseCredential(NewKey().Full)
	expires, revoked := now.Add(time.Hour), now.Add(time.Minute)
	rec := func() *KeyRecord {
		return &KeyRecord{ID: 3, PublicID: issued.PublicID, SecretDigest: issued.Digest, ExpiresAt: &expires, RevokedAt: &revoked,
			Grants: []Grant{{RestaurantID: "r1", Scopes: []string{"b", "a"}}}}
	}
	plain, indexed := rec(), rec()
	indexed.Index()
	want, reason := plain.Check(cred, now)
	require.Empty(t, reason)
	got, reason := indexed.Check(cred, now)
	require.Empty(t, reason)
	require.Equal(t, want, got)
	again, _ := indexed.Check(cred, now)
	require.Same(t, got, again)
	for _, r := range []*KeyRecord{plain, indexed} {
		_, reason = r.Check(other, now)
		require.Equal(t, ReasonUnknown, reason)
		_, reason = r.Check(cred, revoked)
		require.Equal(t, ReasonRevoked, reason)
	}
	indexed.RevokedAt = nil
	_, reason = indexed.Check(cred, expires)
	require.Equal(t, ReasonExpired, reason)
}
