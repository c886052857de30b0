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

// SessionCreate stores a session token (as a digest) acting for keyID with
// the given grants, and drops the key's expired sessions: five statements
// in one transaction whatever the grants, which are stored as their scope sets
// (SessionGrantSetsAdd), so a token of all of a key of 20,000 restaurants
// costs what a token of one restaurant does in round trips and rows.
//
// The grants come from the key as it was read for the request, maybe
// before a `keys ungrant` committed, whose deletion of the tokens carrying
// what it removed would then miss this one: the transaction first locks
// the key's row against key commands (SessionKeyShare), then checks in a
// later statement, at READ COMMITTED, that the key still holds every
// grant of the token (SessionGrantsMissing), answering as a request for
// grants the key lacks does when it does not.
func (s *Store) SessionCreate(ctx context.Context, keyID int64, issued auth.Issued, expiresAt time.Time, grants []auth.Grant) error {
	return s.inTxReadCommitted(ctx, func(q *db.Queries) error {
		if err := q.SessionKeyShare(ctx, keyID); err != nil {
			return err
		}
		p := grantSets(grants)
		if len(p.RestaurantIds) > 0 {
			lost, err := q.SessionGrantsMissing(ctx, db.SessionGrantsMissingParams{ScopeSets: p.ScopeSets,
				SetIndexes: p.SetIndexes, RestaurantIds: p.RestaurantIds, KeyID: keyID})
			switch {
			case err != nil:
				return err
			case lost.RestaurantsLost > 0:
				return apperr.ErrNotFound
			case lost.ScopesLost > 0:
				return apperr.New(apperr.Forbidden, "The key does not hold the requested scopes for the requested restaurant(s).")
			}
		}
		if err := q.SessionDeleteExpired(ctx, keyID); err != nil {
			return err
		}
		id, err := q.SessionInsert(ctx, db.SessionInsertParams{PublicID: issued.PublicID, TokenSha256: issued.Digest,
			KeyID: keyID, ExpiresAt: expiresAt})
		if err != nil {
			return err
		}
		if len(p.RestaurantIds) == 0 {
			return nil
		}
		p.SessionID = id
		return q.SessionGrantSetsAdd(ctx, p)
	})
}

// grantSets groups grants by scope set for SessionGrantSetsAdd: each
// distinct set once, sorted and joined, and per restaurant the index of
// its set. Restaurants sharing one scope list (as a principal's grants
// do) join it once per list, not once per restaurant.
func grantSets(grants []auth.Grant) db.SessionGrantSetsAddParams {
	p := db.SessionGrantSetsAddParams{RestaurantIds: make([]string, 0, len(grants)),
		SetIndexes: make([]int32, 0, len(grants))}
	type list struct {
		first *string
		n     int
	}
	byList := map[list]int32{}
	bySet := map[string]int32{}
	for _, g := range grants {
		if len(g.Scopes) == 0 {
			continue
		}
		l := list{&g.Scopes[0], len(g.Scopes)}
		i, ok := byList[l]
		if !ok {
			scopes := slices.Compact(slices.Sorted(slices.Values(g.Scopes)))
			set := strings.Join(scopes, ",")
			if i, ok = bySet[set]; !ok {
				p.ScopeSets = append(p.ScopeSets, set)
				i = int32(len(p.ScopeSets)) // 1-based, as SQL arrays
				bySet[set] = i
			}
			byList[l] = i
		}
		p.RestaurantIds = append(p.RestaurantIds, g.RestaurantID)
		p.SetIndexes = append(p.SetIndexes, i)
	}
	return p
}

// SessionForAuth loads a session with its key and both grant sets, or
// nil. The token's grants are its few scope sets (SessionAuthLookup), one
// row for a token of all of a large key; restaurants of one set share one
// scope list. The key is read by keyRead, the lookup a key's request makes
// (never from the key cache: a token is always looked up), in a statement
// after the session's: a key command committed between the two is seen
// by the second, so a revoked key or a removed grant refuses the token
// as it did when both were read together, and a token the command
// deleted is not found by the first.
func (s *Store) SessionForAuth(ctx context.Context, publicID string) (*auth.SessionRecord, error) {
	rows, err := s.q.SessionAuthLookup(ctx, publicID)
	if err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	r := rows[0]
	key, err := s.keyRead(ctx, r.KeyPublicID)
	if key == nil {
		return nil, err // deleted since (by hand), with its sessions
	}
	if key.ID != r.KeyID {
		// Read by public id in a later statement: a key deleted since and
		// another made with its public id is not the token's key.
		return nil, nil
	}
	key.SecretDigest = nil // a token proves its own digest, not the key's
	return &auth.SessionRecord{
		ID: r.ID, PublicID: r.PublicID, TokenDigest: r.TokenSha256, ExpiresAt: r.ExpiresAt, Key: *key,
		Grants: sessionGrants(rows),
	}, nil
}

// sessionGrants unfolds a token's scope sets into its grants.
func sessionGrants(rows []db.SessionAuthLookupRow) []auth.Grant {
	n := 0
	for _, r := range rows {
		n += len(r.RestaurantIds)
	}
	if n == 0 {
		return nil
	}
	out := make([]auth.Grant, 0, n)
	for _, r := range rows {
		scopes := slices.Clip(r.Scopes)
		for _, id := range r.RestaurantIds {
			out = append(out, auth.Grant{RestaurantID: id, Scopes: scopes})
		}
	}
	return out
}
