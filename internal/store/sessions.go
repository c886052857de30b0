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

// SessionForAuth loads a session with its key and both grant sets, or nil.
func (s *Store) SessionForAuth(ctx context.Context, publicID string) (*auth.SessionRecord, error) {
	r, err := s.q.SessionAuthLookup(ctx, publicID)
	if ok, err := found(err); !ok {
		return nil, err
	}
	return &auth.SessionRecord{
		ID: r.ID, PublicID: r.PublicID, TokenDigest: r.TokenSha256, ExpiresAt: r.ExpiresAt,
		Key: auth.KeyRecord{ID: r.KeyID, PublicID: r.KeyPublicID, ExpiresAt: r.KeyExpiresAt, RevokedAt: r.KeyRevokedAt,
			Grants: zipGrants(r.KeyGrantRestaurants, r.KeyGrantScopes)},
		Grants: zipGrants(r.SessionGrantRestaurants, r.SessionGrantScopes),
	}, nil
}
