package store

import (
	"context"
	"time"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// SessionCreate stores a session token (as a digest) acting for keyID with
// the given grants, and drops the key's expired sessions.
func (s *Store) SessionCreate(ctx context.Context, keyID int64, issued auth.Issued, expiresAt time.Time, grants []auth.Grant) error {
	return s.inTx(ctx, func(q *db.Queries) error {
		if err := q.SessionDeleteExpired(ctx, keyID); err != nil {
			return err
		}
		id, err := q.SessionInsert(ctx, db.SessionInsertParams{PublicID: issued.PublicID, TokenSha256: issued.Digest,
			KeyID: keyID, ExpiresAt: expiresAt})
		if err != nil {
			return err
		}
		for _, g := range grants {
			if err := q.SessionGrantAdd(ctx, db.SessionGrantAddParams{SessionID: id, RestaurantID: g.RestaurantID, Scopes: g.Scopes}); err != nil {
				return err
			}
		}
		return nil
	})
}

// SessionForAuth loads a session with its key and both grant sets, or
// nil. The key is read by keyRead, the lookup a key's request makes
// (never from the key cache: a token is always looked up), in a statement
// after the session's: a key command committed between the two is seen
// by the second, so a revoked key or a removed grant refuses the token
// as it did when both were read together, and a token the command
// deleted is not found by the first.
func (s *Store) SessionForAuth(ctx context.Context, publicID string) (*auth.SessionRecord, error) {
	r, err := s.q.SessionAuthLookup(ctx, publicID)
	if ok, err := found(err); !ok {
		return nil, err
	}
	key, err := s.keyRead(ctx, r.KeyPublicID)
	if key == nil {
		return nil, err // deleted since (by hand), with its sessions
	}
	key.SecretDigest = nil // a token proves its own digest, not the key's
	return &auth.SessionRecord{
		ID: r.ID, PublicID: r.PublicID, TokenDigest: r.TokenSha256, ExpiresAt: r.ExpiresAt, Key: *key,
		Grants: zipGrants(r.SessionGrantRestaurants, r.SessionGrantScopes),
	}, nil
}
