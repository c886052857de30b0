package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// KeyInfo describes a key for administration; it never holds the secret.
type KeyInfo struct {
	PublicID  string
	Label     string
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
	Grants    []auth.Grant
}

// State is active, revoked, expired or no-grants at time now
// (auth.KeyState).
func (k KeyInfo) State(now time.Time) string {
	if r := auth.KeyState(k.RevokedAt, k.ExpiresAt, len(k.Grants), now); r != "" {
		return string(r)
	}
	return "active"
}

// KeyForAuth loads a key and its grants by public id, or nil when no key
// has that id. Answered from the key cache when it is on (keycache.go),
// where concurrent misses of one key share one lookup, and for an id
// found unknown shortly before, from unknownkeys.go; the record returned
// is shared and must not be modified.
func (s *Store) KeyForAuth(ctx context.Context, publicID string) (*auth.KeyRecord, error) {
	if s.unknown.has(publicID, time.Now()) {
		return nil, nil
	}
	rec, cached := s.keys.get(publicID, time.Now())
	switch {
	case rec != nil:
		s.keys.hits.Add(1)
		return rec, nil
	case !cached:
		s.keys.bypasses.Add(1)
		return s.keyLookup(ctx, publicID)
	}
	ch := s.keys.lookups.DoChan(publicID, func() (any, error) {
		f := s.keys.begin(publicID)
		// Not the caller's context: others may be waiting on this lookup
		// when the caller hangs up.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyLookupTimeout)
		defer cancel()
		rec, err := s.keyLookup(ctx, publicID)
		if rec != nil {
			rec.Index()
		}
		s.keys.end(publicID, f, rec)
		return rec, err
	})
	// Counted once joined, so that a count of misses says how many
	// requests are attached to lookups.
	s.keys.misses.Add(1)
	select {
	case <-ctx.Done():
		return nil, translate(ctx.Err())
	case r := <-ch:
		rec, _ := r.Val.(*auth.KeyRecord)
		return rec, r.Err
	}
}

// keyLookup reads a key and its grants (KeyAuthLookup: one row per scope
// set with the restaurants holding it, or per restaurant for a key whose
// sets are missing). Every restaurant holding the same scopes shares one
// scope list, sorted and unique, so the principal made from the record
// works out what a list opens once, not once per restaurant, and a key of
// 20,000 restaurants holds one list, not 20,000.
func (s *Store) keyLookup(ctx context.Context, publicID string) (*auth.KeyRecord, error) {
	s.keys.dbLookups.Add(1)
	rec, err := s.keyRead(ctx, publicID)
	if rec == nil && err == nil {
		s.unknown.add(publicID, time.Now())
	}
	return rec, err
}

// keyRead is the one place a key's grants are read from the database:
// keyLookup for a key, SessionForAuth for the key a session token acts
// for, so that a token of a large key reads the key's few rows of
// key_grant_sets, not its grants. nil when no key has the id.
func (s *Store) keyRead(ctx context.Context, publicID string) (*auth.KeyRecord, error) {
	rows, err := s.q.KeyAuthLookup(ctx, publicID)
	if err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	rec := &auth.KeyRecord{ID: r.ID, PublicID: r.PublicID, SecretDigest: r.SecretSha256,
		ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt}
	n := 0
	for _, r := range rows {
		n += len(r.RestaurantIds)
	}
	if n == 0 {
		return rec, nil // a key without grants
	}
	rec.Grants = make([]auth.Grant, 0, n)
	// By the sorted list: one order of a set is what the rows almost
	// always hold, and a list is sorted once per row, not per restaurant.
	lists := map[string][]string{}
	for _, r := range rows {
		scopes := slices.Clone(r.Scopes)
		slices.Sort(scopes)
		scopes = slices.Clip(slices.Compact(scopes))
		key := strings.Join(scopes, ",")
		if l, ok := lists[key]; ok {
			scopes = l
		} else {
			lists[key] = scopes
		}
		for _, id := range r.RestaurantIds {
			rec.Grants = append(rec.Grants, auth.Grant{RestaurantID: id, Scopes: scopes})
		}
	}
	return rec, nil
}

// grantBatch bounds the (restaurant, scope) pairs of one GrantAddMany: a
// key of 20,000 restaurants x 25 scopes is ten statements.
const grantBatch = 50_000

// addGrants inserts grants in batches of grantBatch pairs (idempotent).
func addGrants(ctx context.Context, q *db.Queries, keyID int64, grants []auth.Grant) error {
	n := 0
	for _, g := range grants {
		n += len(g.Scopes)
	}
	p := db.GrantAddManyParams{KeyID: keyID, RestaurantIds: make([]string, 0, min(n, grantBatch)),
		Scopes: make([]string, 0, min(n, grantBatch))}
	flush := func() error {
		if len(p.Scopes) == 0 {
			return nil
		}
		err := q.GrantAddMany(ctx, p)
		p.RestaurantIds, p.Scopes = p.RestaurantIds[:0], p.Scopes[:0]
		return err
	}
	for _, g := range grants {
		for _, scope := range g.Scopes {
			p.RestaurantIds = append(p.RestaurantIds, g.RestaurantID)
			p.Scopes = append(p.Scopes, scope)
			if len(p.Scopes) == grantBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// KeyCreate stores a new key with its grants in one transaction. Every
// restaurant must be enabled; otherwise nothing is written.
func (s *Store) KeyCreate(ctx context.Context, issued auth.Issued, label string, expiresAt *time.Time, grants []auth.Grant) (KeyInfo, error) {
	var info KeyInfo
	err := s.inTxReadCommitted(ctx, func(q *db.Queries) error {
		if err := requireRestaurants(ctx, q, grants); err != nil {
			return err
		}
		k, err := q.KeyInsert(ctx, db.KeyInsertParams{
			PublicID: issued.PublicID, SecretSha256: issued.Digest, Label: label, ExpiresAt: expiresAt,
		})
		if err != nil {
			return err
		}
		if err := addGrants(ctx, q, k.ID, grants); err != nil {
			return err
		}
		if err := q.KeyGrantSetsRebuild(ctx, k.ID); err != nil {
			return err
		}
		info = KeyInfo{PublicID: k.PublicID, Label: k.Label, CreatedAt: k.CreatedAt,
			ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt, Grants: normaliseGrants(grants)}
		return nil
	})
	return info, translate(err)
}

// KeySummary describes a key for a listing: its grants counted, not
// listed (KeyGrantsEach lists them); it never holds the secret.
type KeySummary struct {
	id        int64
	PublicID  string
	Label     string
	CreatedAt time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
	// Restaurants is how many restaurants the key reaches, Scopes how
	// many distinct scopes it holds on any of them and Grants how many
	// (restaurant, scope) pairs.
	Restaurants, Scopes, Grants int64
}

// State is active, revoked, expired or no-grants at time now
// (auth.KeyState).
func (k KeySummary) State(now time.Time) string {
	if r := auth.KeyState(k.RevokedAt, k.ExpiresAt, int(k.Grants), now); r != "" {
		return string(r)
	}
	return "active"
}

// KeyList lists every key, oldest first, with its grants counted: a few
// dozen bytes a key, whatever it is granted.
func (s *Store) KeyList(ctx context.Context) ([]KeySummary, error) {
	rows, err := s.q.KeyList(ctx)
	if err != nil {
		return nil, translate(err)
	}
	out := make([]KeySummary, 0, len(rows))
	for _, r := range rows {
		out = append(out, KeySummary{id: r.ID, PublicID: r.PublicID, Label: r.Label, CreatedAt: r.CreatedAt,
			ExpiresAt: r.ExpiresAt, RevokedAt: r.RevokedAt, Restaurants: r.Restaurants, Scopes: r.Scopes, Grants: r.Grants})
	}
	return out, nil
}

// grantPage is how many restaurants of a key KeyGrantsEach reads per
// statement: what a listing holds in memory at once.
const grantPage = 1000

// KeyGrantsEach calls f with each restaurant k (from KeyList) is granted
// and its scopes, sorted, in restaurant id order, reading grantPage
// restaurants at a time, so that a key of 20,000 restaurants is listed
// in bounded memory. Grants changed while it runs may be seen or not.
func (s *Store) KeyGrantsEach(ctx context.Context, k KeySummary, f func(auth.Grant) error) error {
	after := ""
	for {
		rows, err := s.q.GrantListForKey(ctx, db.GrantListForKeyParams{KeyID: k.id, After: after, MaxRows: grantPage})
		if err != nil {
			return translate(err)
		}
		for _, r := range rows {
			if err := f(auth.Grant{RestaurantID: r.RestaurantID, Scopes: strings.Split(r.Scopes, ",")}); err != nil {
				return err
			}
		}
		if len(rows) < grantPage {
			return nil
		}
		after = rows[len(rows)-1].RestaurantID
	}
}

// KeyRevoke revokes a key from now on. When it returns, no server
// accepts the key any more (keyCommand).
func (s *Store) KeyRevoke(ctx context.Context, publicID string) (time.Time, error) {
	var at time.Time
	err := s.keyCommand(ctx, func(q *db.Queries) error {
		t, err := q.KeyRevoke(ctx, db.KeyRevokeParams{PublicID: publicID, RevokedAt: time.Now()})
		switch ok, err := found(err); {
		case err != nil:
			return err
		case !ok:
			return noSuchKey(publicID)
		}
		at = *t
		return nil
	})
	return at, err
}

// KeyGrant adds grants to an existing key (idempotent per scope); every
// server honours them when it returns (keyCommand).
func (s *Store) KeyGrant(ctx context.Context, publicID string, grants []auth.Grant) error {
	return s.keyCommand(ctx, func(q *db.Queries) error {
		k, err := keyByPublicID(ctx, q, publicID)
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			// A grant on a revoked key could never be used; saying so beats
			// an operator believing a partner now has access.
			return apperr.New(apperr.Invalid, "key %s is revoked; issue a new key instead", publicID)
		}
		if err := requireRestaurants(ctx, q, grants); err != nil {
			return err
		}
		if err := addGrants(ctx, q, k.ID, grants); err != nil {
			return err
		}
		return q.KeyGrantSetsRebuild(ctx, k.ID)
	})
}

// KeyUngrant removes g.Scopes (all the key holds on g.RestaurantID when
// g.Scopes is empty) from a key, reporting how many grants went away.
// Session tokens carrying a removed grant are deleted with it. When it
// returns, no server lets the key use what was removed (keyCommand).
func (s *Store) KeyUngrant(ctx context.Context, publicID string, g auth.Grant) (int64, error) {
	restaurantID, scopes := g.RestaurantID, g.Scopes
	var n int64
	err := s.keyCommand(ctx, func(q *db.Queries) error {
		k, err := keyByPublicID(ctx, q, publicID)
		if err != nil {
			return err
		}
		if len(scopes) == 0 {
			n, err = q.GrantRemoveRestaurant(ctx, db.GrantRemoveRestaurantParams{KeyID: k.ID, RestaurantID: restaurantID})
		} else {
			n, err = q.GrantRemoveScopes(ctx, db.GrantRemoveScopesParams{KeyID: k.ID, RestaurantID: restaurantID, Scopes: scopes})
		}
		if err != nil {
			return err
		}
		// A token that lost a grant is dead for good: restoring the grant
		// must not revive it.
		if _, err = q.SessionDeleteCarrying(ctx, db.SessionDeleteCarryingParams{KeyID: k.ID, RestaurantID: restaurantID, Scopes: nonNil(scopes)}); err != nil {
			return err
		}
		return q.KeyGrantSetsRebuild(ctx, k.ID)
	})
	return n, err
}

func keyByPublicID(ctx context.Context, q *db.Queries, publicID string) (db.KeyByPublicIDRow, error) {
	k, err := q.KeyByPublicID(ctx, publicID)
	switch ok, err := found(err); {
	case err != nil:
		return k, err
	case !ok:
		return k, noSuchKey(publicID)
	}
	return k, nil
}

func noSuchKey(publicID string) error {
	return apperr.New(apperr.NotFound, "no key with public id %s", publicID)
}

// requireRestaurants fails with Invalid naming every restaurant that has not
// been enabled (the first 20, and how many there are).
func requireRestaurants(ctx context.Context, q *db.Queries, grants []auth.Grant) error {
	ids := make([]string, 0, len(grants))
	asked := make(map[string]bool, len(grants))
	for _, g := range grants {
		if !asked[g.RestaurantID] {
			asked[g.RestaurantID] = true
			ids = append(ids, g.RestaurantID)
		}
	}
	found, err := q.RestaurantsExisting(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range found {
		delete(asked, id)
	}
	if len(asked) == 0 {
		return nil
	}
	var missing []string
	for _, id := range ids {
		if asked[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 20 {
		return apperr.New(apperr.Invalid, "restaurants not enabled: %v and %d more (run `foodsafe restaurants add ID` first)",
			missing[:20], len(missing)-20)
	}
	return apperr.New(apperr.Invalid, "restaurant not enabled: %v (run `foodsafe restaurants add ID` first)", missing)
}

// normaliseGrants merges grants per restaurant with sorted, unique scopes.
func normaliseGrants(grants []auth.Grant) []auth.Grant {
	return auth.NewPrincipal(0, "", grants).Grants()
}
