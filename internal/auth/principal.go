package auth

import (
	"slices"
	"sort"
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
// that serves many requests (the key cache): indexing the grants was 3%
// of a small read's CPU. Call it before the record is shared; the
// principal is then shared by every request of the key, and like the
// record it is never modified.
func (k *KeyRecord) Index() {
	k.principal = k.newPrincipal()
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
}

// NewPrincipal indexes grants by restaurant, scopes sorted and unique.
func NewPrincipal(keyID int64, publicID string, grants []Grant) *Principal {
	m := make(map[string][]string, len(grants))
	for _, g := range grants {
		m[g.RestaurantID] = append(m[g.RestaurantID], g.Scopes...)
	}
	for r, s := range m {
		sort.Strings(s)
		m[r] = slices.Compact(s)
	}
	return &Principal{KeyID: keyID, KeyPublicID: publicID, grants: m}
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

// Grants lists every grant, restaurants sorted, scopes sorted.
func (p *Principal) Grants() []Grant {
	out := make([]Grant, 0, len(p.grants))
	for r, s := range p.grants {
		out = append(out, Grant{RestaurantID: r, Scopes: slices.Clone(s)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RestaurantID < out[j].RestaurantID })
	return out
}

// Empty reports a principal with no grants at all (spec 5.3: 401).
func (p *Principal) Empty() bool { return len(p.grants) == 0 }

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
	for _, g := range p.Grants() {
		for _, scope := range g.Scopes {
			if !key.Can(g.RestaurantID, scope) {
				return nil, ReasonGrantsChanged
			}
		}
	}
	if p.Empty() {
		return nil, ReasonNoGrants
	}
	p.SessionID = s.ID
	return p, ""
}
