package auth

import (
	"strings"
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

	// Scopes answers a copy; Grants the principal's own list, made once
	// (no request copies a key's grants).
	p.Scopes("r1")[0] = "x"
	require.True(t, p.Can("r1", "areas:read"))
	require.Same(t, &p.Grants()[0], &p.Grants()[0])
}

// Grants loaded as the store loads them (each restaurant once, scopes
// sorted, one list shared by the restaurants holding the same scopes) are
// kept as they are; anything else is copied before it is sorted, never
// sorted in the caller's memory.
func TestPrincipalSharesSortedScopeLists(t *testing.T) {
	shared := []string{"areas:read", "cooling:read"}
	unsorted := []string{"users:read", "areas:read"}
	p := NewPrincipal(1, "k", []Grant{{RestaurantID: "r2", Scopes: shared}, {RestaurantID: "r1", Scopes: shared},
		{RestaurantID: "r3", Scopes: unsorted}})
	require.Equal(t, []string{"r1", "r2", "r3"}, []string{p.Grants()[0].RestaurantID, p.Grants()[1].RestaurantID, p.Grants()[2].RestaurantID})
	require.Same(t, &shared[0], &p.Grants()[0].Scopes[0])
	require.Same(t, &shared[0], &p.Grants()[1].Scopes[0])
	require.Equal(t, []string{"users:read", "areas:read"}, unsorted, "the caller's list is left as it was")
	require.Equal(t, []string{"areas:read", "users:read"}, p.Grants()[2].Scopes)
	require.Equal(t, 3, p.Restaurants())
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
	require.Equal(t, want.KeyID, got.KeyID)
	require.Equal(t, want.KeyPublicID, got.KeyPublicID)
	require.Equal(t, want.KeyExpiresAt, got.KeyExpiresAt)
	require.Equal(t, want.Grants(), got.Grants())
	require.Equal(t, want.Reach(), got.Reach())
	require.Equal(t, want.Streams(), got.Streams())
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

// A grants file reads as the --grant flags would, line by line, and the
// first line that does not read fails the whole file with its number.
func TestReadGrantSpecs(t *testing.T) {
	_, err := ReadGrantSpecs(strings.NewReader("# partner Acme\n\nr1=areas:read,deliveries:read\r\n  r2 = users:read \nr1=areas:write\n"))
	require.Error(t, err, "a space before = is not part of an id")
	got, err := ReadGrantSpecs(strings.NewReader("# partner Acme\n\nr1=areas:read, deliveries:read\r\n  r2=users:read \nr1=areas:write"))
	require.NoError(t, err)
	require.Equal(t, []Grant{{RestaurantID: "r1", Scopes: []string{"areas:read", "deliveries:read"}},
		{RestaurantID: "r2", Scopes: []string{"users:read"}}, {RestaurantID: "r1", Scopes: []string{"areas:write"}}}, got)

	got, err = ReadGrantSpecs(strings.NewReader(""))
	require.NoError(t, err)
	require.Empty(t, got)

	for _, c := range []struct{ in, want string }{
		{"r1=areas:read\nr2\n", "line 2: grant \"r2\": want RESTAURANT=SCOPE"},
		{"r1=areas:read\n\n# x\nr2=areas:reed\n", "line 4: grant \"r2=areas:reed\": unknown scope \"areas:reed\""},
		{"r/1=areas:read\n", "line 1: grant \"r/1=areas:read\": \"r/1\" is not a valid restaurant id"},
		{"r1=\n", "line 1: grant \"r1=\": want RESTAURANT=SCOPE"},
		{"r1=areas:read\n" + strings.Repeat("x", MaxGrantLine+1) + "\n", "line 2: longer than 16384 bytes"},
	} {
		_, err := ReadGrantSpecs(strings.NewReader(c.in))
		require.ErrorContains(t, err, c.want)
	}
}

// A token whose restaurants share one scope list, as the store loads a
// token of a whole key, is checked restaurant by restaurant against the
// key: one restaurant whose list in the key lacks a scope of the shared
// list refuses it, wherever it comes among restaurants whose lists hold
// it, and a restaurant the key lost refuses it too.
func TestSessionCheckWithSharedScopeLists(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	issued := NewToken()
	cred, ok := ParseCredential(issued.Full)
	require.True(t, ok)
	full := []string{"areas:read", "areas:write"}
	narrow := []string{"areas:read"}
	tokenList := []string{"areas:read", "areas:write"}
	var token []Grant
	for _, r := range []string{"r1", "r2", "r3", "r4"} {
		token = append(token, Grant{RestaurantID: r, Scopes: tokenList})
	}
	check := func(key []Grant) Reason {
		s := &SessionRecord{ID: 1, TokenDigest: issued.Digest, ExpiresAt: now.Add(time.Hour),
			Key: KeyRecord{ID: 2, PublicID: "pub", Grants: key}, Grants: token}
		_, reason := s.Check(cred, now)
		return reason
	}
	keyWith := func(lists map[string][]string) []Grant {
		var g []Grant
		for _, r := range []string{"r1", "r2", "r3", "r4", "r5"} {
			if l, ok := lists[r]; ok {
				g = append(g, Grant{RestaurantID: r, Scopes: l})
			} else {
				g = append(g, Grant{RestaurantID: r, Scopes: full})
			}
		}
		return g
	}
	require.Equal(t, Reason(""), check(keyWith(nil)), "the key holds every grant of the token")
	require.Equal(t, Reason(""), check(keyWith(map[string][]string{"r2": {"areas:read", "areas:write", "users:read"}})),
		"a wider list in the key")
	for _, r := range []string{"r1", "r3", "r4"} {
		require.Equal(t, ReasonGrantsChanged, check(keyWith(map[string][]string{r: narrow})), "%s lost areas:write", r)
	}
	lost := keyWith(nil)
	lost = append(lost[:2], lost[3:]...) // r3 gone
	require.Equal(t, ReasonGrantsChanged, check(lost), "the key lost r3")
}

// A restaurant may come in more than one scope set, in the token or in
// the key: the check holds the token's scopes on it together against the
// key's scopes on it together, never one set against one set.
func TestSessionCheckWithARestaurantInTwoSets(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	issued := NewToken()
	cred, ok := ParseCredential(issued.Full)
	require.True(t, ok)
	check := func(key, token []Grant) Reason {
		s := &SessionRecord{ID: 1, TokenDigest: issued.Digest, ExpiresAt: now.Add(time.Hour),
			Key: KeyRecord{ID: 2, PublicID: "pub", Grants: key}, Grants: token}
		_, reason := s.Check(cred, now)
		return reason
	}
	split := []Grant{{RestaurantID: "r1", Scopes: []string{"areas:read"}}, {RestaurantID: "r1", Scopes: []string{"areas:write"}}}
	both := []Grant{{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write"}}}
	readOnly := []Grant{{RestaurantID: "r1", Scopes: []string{"areas:read"}}}
	require.Equal(t, ReasonGrantsChanged, check(readOnly, split), "the token's second set on r1 is not in the key")
	require.Equal(t, Reason(""), check(split, both), "the key's two sets on r1 together cover the token")
	require.Equal(t, Reason(""), check(split, split))
	require.Equal(t, Reason(""), check(both, split))
	require.Equal(t, ReasonGrantsChanged, check(readOnly, both))
}
