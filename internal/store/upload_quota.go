package store

import (
	"context"
	"time"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// UploadQuotaUsed is the bytes of files key attached to restaurant on the
// UTC day of now; 0 when none, or only on an earlier day.
func (s *Store) UploadQuotaUsed(ctx context.Context, restaurant string, key int64, now time.Time) (int64, error) {
	n, err := s.q.UploadQuotaUsed(ctx, db.UploadQuotaUsedParams{RestaurantID: restaurant, KeyID: key, Day: utcDay(now)})
	if ok, err := found(err); !ok {
		return 0, translate(err)
	}
	return n, nil
}

// UploadQuotaAdd adds the bytes of a file key attached to restaurant to
// its count of the UTC day of now. The caller adds only uploads that
// stored a new file, never a replay.
func (s *Store) UploadQuotaAdd(ctx context.Context, restaurant string, key int64, now time.Time, bytes int64) error {
	return translate(s.q.UploadQuotaAdd(ctx, db.UploadQuotaAddParams{RestaurantID: restaurant, KeyID: key, Day: utcDay(now), Bytes: bytes}))
}

// AssetStored says whether the asset objectKey of record k is already
// stored with the bytes of digest sha: an upload of them is a replay,
// which stores nothing and is not held to the upload quota.
func (s *Store) AssetStored(ctx context.Context, k RecordKey, objectKey, sha string) (bool, error) {
	row, err := s.q.AssetUploadGet(ctx, db.AssetUploadGetParams{RestaurantID: k.RestaurantID, Collection: k.Collection,
		RecordID: k.RecordID, ObjectKey: objectKey})
	if ok, err := found(err); !ok {
		return false, translate(err)
	}
	return row.Sha256 == sha, nil
}

// DeliveryImageStored says whether image k is already stored with the
// bytes of digest sha (a replay), as AssetStored.
func (s *Store) DeliveryImageStored(ctx context.Context, k ImageKey, sha string) (bool, error) {
	row, err := s.q.DeliveryImageGet(ctx, db.DeliveryImageGetParams{RestaurantID: k.RestaurantID, DeliveryID: k.DeliveryID, ImageID: k.ImageID})
	if ok, err := found(err); !ok {
		return false, translate(err)
	}
	return row.Sha256 == sha, nil
}
