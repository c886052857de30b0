package auth

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Grant is what a key holds for one restaurant.
type Grant struct {
	RestaurantID string
	Scopes       []string
}

// KeyRecord is a stored key as the resolver needs it.
type KeyRecord struct {
	ID           int64
	PublicID     string
	SecretDigest []byte
	ExpiresAt    *time.Time
	RevokedAt    *time.Time
	Grants       []Grant
	// principal is what Check answers, made once by Index.
	principal *Principal
}

// Index makes once the principal Check answers for the key, for a record
// that serves many requests (the key cache), with everything a request
// asks of it computed then: the grants indexed by restaurant and sorted,
// the streams the key reads and their fingerprint (Streams), and what it
// holds anywhere (Reach). A request then costs the same for a key of one
// restaurant as for one of 20,000 (indexing the grants was 3% of a small
// read's CPU; grouping and fingerprinting 20,000 restaurants' streams, 88%
// of a changes listing's). Call it before the record is shared; the
// principal is then shared by every request of the key, and like the
// record it is never modified.
func (k *KeyRecord) Index() {
	k.principal = k.newPrincipal()
	k.principal.Streams()
}

func (k *KeyRecord) newPrincipal() *Principal {
	p := NewPrincipal(k.ID, k.PublicID, k.Grants)
	p.KeyExpiresAt = k.ExpiresAt
	return p
}

// Principal is an authenticated caller: a key, or a session token acting
// for a key, with the grants it may use on this request.
type Principal struct {
	KeyID       int64
	KeyPublicID string
	// SessionID is set when the caller presented a session token.
	SessionID int64
	// KeyExpiresAt is the key's expiry, which no session may outlive.
	KeyExpiresAt *time.Time
	grants       map[string][]string
	// sorted is every grant, restaurants sorted bytewise; its scope lists
	// are those of grants.
	sorted []Grant
	reach  Reach
	// streams is made on first use: at once for a cached key (Index), never
	// for a session token that only writes.
	streams func() *Streams
	// tag is GrantsTag, made on first use.
	tag func() string
}

// NewPrincipal indexes grants by restaurant, scopes sorted and unique.
// A grant whose restaurant comes once and whose scopes are already sorted
// and unique (as the store loads them, one scope list shared by every
// restaurant that holds the same scopes) is kept as it is, not copied:
// grants must not be modified afterwards.
func NewPrincipal(keyID int64, publicID string, grants []Grant) *Principal {
	m := make(map[string][]string, len(grants))
	var unsorted map[string]bool
	// The list last found sorted: restaurants sharing one come in a row.
	var sortedList scopeList
	for _, g := range grants {
		prev, seen := m[g.RestaurantID]
		switch {
		case seen:
			// Never appended to in place: the slice may be the caller's.
			m[g.RestaurantID] = append(slices.Clip(prev), g.Scopes...)
		case listOf(g.Scopes) == sortedList && len(g.Scopes) > 0 || strictlySorted(g.Scopes):
			sortedList = listOf(g.Scopes)
			m[g.RestaurantID] = g.Scopes
			continue
		default:
			m[g.RestaurantID] = slices.Clone(g.Scopes)
		}
		if unsorted == nil {
			unsorted = map[string]bool{}
		}
		unsorted[g.RestaurantID] = true
	}
	for r := range unsorted {
		s := m[r]
		sort.Strings(s)
		m[r] = slices.Compact(s)
	}
	sorted := make([]Grant, 0, len(m))
	for r, s := range m {
		sorted = append(sorted, Grant{RestaurantID: r, Scopes: s})
	}
	// Bytewise, as PostgreSQL's "C" collation orders: the order of every
	// listing by restaurant.
	slices.SortFunc(sorted, func(a, b Grant) int { return strings.Compare(a.RestaurantID, b.RestaurantID) })
	p := &Principal{KeyID: keyID, KeyPublicID: publicID, grants: m, sorted: sorted, reach: reachOf(sorted)}
	p.streams = sync.OnceValue(func() *Streams { return streamsOf(sorted) })
	p.tag = sync.OnceValue(func() string { return grantsTagOf(sorted) })
	return p
}

// strictlySorted reports scopes in increasing order without repeats.
func strictlySorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

// HasRestaurant reports whether any grant names the restaurant.
func (p *Principal) HasRestaurant(restaurantID string) bool {
	_, ok := p.grants[restaurantID]
	return ok
}

// Can reports whether the principal holds scope for the restaurant.
func (p *Principal) Can(restaurantID, scope string) bool {
	_, ok := slices.BinarySearch(p.grants[restaurantID], scope)
	return ok
}

// Scopes lists the scopes held for a restaurant, sorted.
func (p *Principal) Scopes(restaurantID string) []string {
	return slices.Clone(p.grants[restaurantID])
}

// Grants lists every grant, restaurants sorted bytewise, scopes sorted.
// The list is the principal's own, made once and shared by every request
// of the key (a key of 20,000 restaurants is not copied per request): it
// must not be modified.
func (p *Principal) Grants() []Grant { return p.sorted }

// Restaurants counts the restaurants the principal holds grants on.
func (p *Principal) Restaurants() int { return len(p.sorted) }

// Empty reports a principal with no grants at all (spec 5.3: 401).
func (p *Principal) Empty() bool { return len(p.grants) == 0 }

// Reach says what the principal holds on at least one restaurant.
func (p *Principal) Reach() Reach { return p.reach }

// Streams is what the principal reads key-wide (GET /v1/changes), made
// once per principal.
func (p *Principal) Streams() *Streams { return p.streams() }

// Reason says why a credential was refused. It goes to logs and the audit
// trail, never to the client (all of them are the same 401).
type Reason string

// The reasons a credential is refused.
const (
	ReasonMissing   Reason = "missing"
	ReasonMalformed Reason = "malformed"
	ReasonUnknown   Reason = "unknown"
	ReasonRevoked   Reason = "revoked"
	ReasonExpired   Reason = "expired"
	ReasonNoGrants  Reason = "no-grants"
	// ReasonGrantsChanged: a session token whose key no longer holds every
	// grant the token carries.
	ReasonGrantsChanged Reason = "grants-changed"
)

// Check validates a stored key against a presented credential at time now.
func (k *KeyRecord) Check(c Credential, now time.Time) (*Principal, Reason) {
	if !c.Matches(k.SecretDigest) {
		return nil, ReasonUnknown
	}
	if r := k.usable(now); r != "" {
		return nil, r
	}
	if k.principal != nil {
		return k.principal, ""
	}
	return k.newPrincipal(), ""
}

// usable reports why the key cannot be used at now, or "".
func (k *KeyRecord) usable(now time.Time) Reason {
	return KeyState(k.RevokedAt, k.ExpiresAt, len(k.Grants), now)
}

// KeyState is the one rule of a key's state at now: revoked from its
// revocation instant, expired from its expiry instant, unusable without
// grants; "" when it is usable. Authentication and `keys list` both read it.
func KeyState(revokedAt, expiresAt *time.Time, grants int, now time.Time) Reason {
	switch {
	case revokedAt != nil && !revokedAt.After(now):
		return ReasonRevoked
	case expiresAt != nil && !expiresAt.After(now):
		return ReasonExpired
	case grants == 0:
		return ReasonNoGrants
	}
	return ""
}

// SessionRecord is a stored mobile session with its key, as the resolver
// needs it. Key.SecretDigest is not loaded.
type SessionRecord struct {
	ID          int64
	PublicID    string
	TokenDigest []byte
	ExpiresAt   time.Time
	Key         KeyRecord
	Grants      []Grant
}

// Check validates a session token: its own expiry, its key's state, and
// that the key still holds every grant the token carries. The principal
// acts for the key with the token's (narrower) grants.
func (s *SessionRecord) Check(c Credential, now time.Time) (*Principal, Reason) {
	if !c.Matches(s.TokenDigest) {
		return nil, ReasonUnknown
	}
	if !s.ExpiresAt.After(now) {
		return nil, ReasonExpired
	}
	if r := s.Key.usable(now); r != "" {
		return nil, r
	}
	key := NewPrincipal(s.Key.ID, s.Key.PublicID, s.Key.Grants)
	p := NewPrincipal(s.Key.ID, s.Key.PublicID, s.Grants)
	if !holdsAll(key, p) {
		return nil, ReasonGrantsChanged
	}
	if p.Empty() {
		return nil, ReasonNoGrants
	}
	p.SessionID = s.ID
	return p, ""
}

// holdsAll reports whether key holds every grant of p. Whether a scope
// list of the key holds one of p is worked out once per pair of lists:
// the store shares one list between the restaurants of a scope set, so a
// token carrying all of a key of 20,000 restaurants x 25 scopes is one
// comparison of two lists and 20,000 look-ups, not 500,000 searches.
func holdsAll(key, p *Principal) bool {
	held := map[[2]scopeList]bool{}
	for _, g := range p.sorted {
		if len(g.Scopes) == 0 {
			continue // carries nothing there
		}
		k, ok := key.grants[g.RestaurantID]
		if !ok {
			return false
		}
		pair := [2]scopeList{listOf(k), listOf(g.Scopes)}
		h, seen := held[pair]
		if !seen {
			h = subsetOf(g.Scopes, k)
			held[pair] = h
		}
		if !h {
			return false
		}
	}
	return true
}

// subsetOf reports whether every scope of a is in b, both sorted.
func subsetOf(a, b []string) bool {
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			return false
		}
	}
	return true
}
