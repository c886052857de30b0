package store

import (
	"context"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// Resumption is a resumable upload in progress: what it is for, the
// digest declared at its creation, and the bytes kept so far.
type Resumption struct {
	RestaurantID, ID string
	KeyID            int64
	// Kind is ResumeAsset (Collection, RecordID, ObjectKey name the file)
	// or ResumeImage (DeliveryID, ImageID).
	Kind                            string
	Collection, RecordID, ObjectKey string
	DeliveryID, ImageID             string
	ContentType                     string
	SHA256                          string
	// Length is the whole file's declared length; -1 while unknown.
	Length int64
	Kept   int64
	// Pieces name the file-store pieces holding the kept bytes, in order.
	Pieces    []string
	CreatedAt int64
	ExpiresAt int64
}

// The kinds of resumable upload.
const (
	ResumeAsset = "asset"
	ResumeImage = "image"
)

func lengthParam(n int64) *int64 {
	if n < 0 {
		return nil
	}
	return &n
}

// ResumptionCreate records a new resumable upload (nothing kept yet).
func (s *Store) ResumptionCreate(ctx context.Context, r Resumption) error {
	return translate(s.q.UploadResumptionCreate(ctx, db.UploadResumptionCreateParams{RestaurantID: r.RestaurantID, ID: r.ID,
		KeyID: r.KeyID, Kind: r.Kind, Collection: r.Collection, RecordID: r.RecordID, ObjectKey: r.ObjectKey,
		DeliveryID: r.DeliveryID, ImageID: r.ImageID, ContentType: r.ContentType, Sha256: r.SHA256,
		Length: lengthParam(r.Length), CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}))
}

// ResumptionGet is key's upload id in restaurant, unexpired at now
// (Unix ms); any other is apperr.ErrNotFound, indistinguishably.
func (s *Store) ResumptionGet(ctx context.Context, restaurant, id string, key, now int64) (Resumption, error) {
	row, err := s.q.UploadResumptionGet(ctx, db.UploadResumptionGetParams{RestaurantID: restaurant, ID: id, KeyID: key, Now: now})
	if ok, err := found(err); !ok {
		if err == nil {
			err = apperr.ErrNotFound
		}
		return Resumption{}, translate(err)
	}
	r := Resumption{RestaurantID: row.RestaurantID, ID: row.ID, KeyID: row.KeyID, Kind: row.Kind, Collection: row.Collection,
		RecordID: row.RecordID, ObjectKey: row.ObjectKey, DeliveryID: row.DeliveryID, ImageID: row.ImageID,
		ContentType: row.ContentType, SHA256: row.Sha256, Length: -1, Kept: row.Kept, Pieces: row.Pieces,
		CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt}
	if row.Length != nil {
		r.Length = *row.Length
	}
	return r, nil
}

// ResumptionAdvance commits a piece appended at oldKept, now durably
// written, taking the kept bytes to newKept (and recording length, -1 if
// still unknown, when none was). False when the upload moved on, went or
// expired (at now, Unix ms) meanwhile: the piece is not part of it.
func (s *Store) ResumptionAdvance(ctx context.Context, restaurant, id string, oldKept, newKept int64, piece string, length, now int64) (bool, error) {
	n, err := s.q.UploadResumptionAdvance(ctx, db.UploadResumptionAdvanceParams{RestaurantID: restaurant, ID: id,
		OldKept: oldKept, NewKept: newKept, Piece: piece, Length: lengthParam(length), Now: now})
	return n == 1, translate(err)
}

// OpenResumptions are the uploads one key has open on a restaurant.
type OpenResumptions struct {
	Count int64
	// Bytes they claim: each one's declared length, else its kept bytes.
	Bytes int64
	// FirstExpiry is when the first of them expires (Unix ms; 0 if none).
	FirstExpiry int64
}

// ResumptionsOpen counts key's uploads on restaurant unexpired at now
// (Unix ms).
func (s *Store) ResumptionsOpen(ctx context.Context, restaurant string, key, now int64) (OpenResumptions, error) {
	r, err := s.q.UploadResumptionsOpenOfKey(ctx, db.UploadResumptionsOpenOfKeyParams{RestaurantID: restaurant, KeyID: key, Now: now})
	if err != nil {
		return OpenResumptions{}, translate(err)
	}
	return OpenResumptions{Count: r.Open, Bytes: r.Bytes, FirstExpiry: r.FirstExpiry}, nil
}

// ResumptionDelete forgets an upload (completed, cancelled or expired);
// false when it was already gone.
func (s *Store) ResumptionDelete(ctx context.Context, restaurant, id string) (bool, error) {
	n, err := s.q.UploadResumptionDelete(ctx, db.UploadResumptionDeleteParams{RestaurantID: restaurant, ID: id})
	return n == 1, translate(err)
}

// ResumptionKey names one resumable upload.
type ResumptionKey struct{ RestaurantID, ID string }

// ResumptionsExpired lists up to batch uploads expired at now (Unix ms).
func (s *Store) ResumptionsExpired(ctx context.Context, now int64, batch int) ([]ResumptionKey, error) {
	rows, err := s.q.UploadResumptionsExpired(ctx, db.UploadResumptionsExpiredParams{Now: now, Batch: int32(batch)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]ResumptionKey, len(rows))
	for i, r := range rows {
		out[i] = ResumptionKey{RestaurantID: r.RestaurantID, ID: r.ID}
	}
	return out, nil
}
