package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/db"
	"github.com/foodsafe/foodsafe/internal/model"
)

// Upload is a verified file: its bytes are in blob storage under SHA256.
type Upload struct {
	RestaurantID string
	Collection   string
	RecordID     string
	SHA256       string
	ContentType  string
	ByteLength   int64
}

// AssetStatus values of spec 2.6.
const (
	AssetPending  = "pending"
	AssetUploaded = "uploaded"
)

// errNoChange aborts a transaction that turned out to be a replay.
var errNoChange = errors.New("replay: nothing to write")

// AssetUploadApply records that the bytes of the asset named by the
// record's current data.asset.objectKey arrived and were verified: it adds
// a change to the record's stream whose data.asset is `uploaded` with the
// verified contentType, byteLength and sha256. It runs under the stream's
// lock and re-reads the record there, so a snapshot ingested meanwhile is
// never overwritten. The same bytes again are a replay (the first answer,
// nothing written); other bytes for an uploaded objectKey are a conflict.
func (s *Store) AssetUploadApply(ctx context.Context, u Upload, receivedAt int64) (model.Envelope, bool, error) {
	var out model.Envelope
	var replayed bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		seq, err := q.StreamNextSequence(ctx, db.StreamNextSequenceParams{RestaurantID: u.RestaurantID, Collection: u.Collection})
		if err != nil {
			return err
		}
		rec, data, objectKey, err := uploadTarget(ctx, q, u.RestaurantID, u.Collection, u.RecordID)
		if err != nil {
			return err
		}
		prev, err := q.AssetUploadGet(ctx, db.AssetUploadGetParams{RestaurantID: u.RestaurantID, Collection: u.Collection,
			RecordID: u.RecordID, ObjectKey: objectKey})
		switch {
		case err == nil && prev.Sha256 == u.SHA256:
			change, err := q.RecordChangeByMutation(ctx, db.RecordChangeByMutationParams{RestaurantID: u.RestaurantID, MutationID: prev.MutationID})
			if err != nil {
				return err
			}
			out, replayed = changeEnvelope(change), true
			return errNoChange
		case err == nil:
			return apperr.New(apperr.Conflict, "Asset %q of record %s was already uploaded with other bytes (sha256 %s); a new file needs a new objectKey.",
				objectKey, u.RecordID, prev.Sha256)
		case !isNoRows(err):
			return err
		}

		verified := verifiedAsset(objectKey, u.SHA256, u.ContentType, u.ByteLength)
		if data["asset"], err = json.Marshal(verified); err != nil {
			return err
		}
		newData, err := json.Marshal(data)
		if err != nil {
			return err
		}
		fp := sha256.Sum256([]byte(fmt.Sprintf("asset-upload\n%s\n%s\n%s\n%s", u.Collection, u.RecordID, objectKey, u.SHA256)))
		mutationID := "upload." + hex.EncodeToString(fp[:16])
		if err := q.AssetUploadInsert(ctx, db.AssetUploadInsertParams{RestaurantID: u.RestaurantID, Collection: u.Collection,
			RecordID: u.RecordID, ObjectKey: objectKey, Sha256: u.SHA256, ContentType: u.ContentType,
			ByteLength: u.ByteLength, UploadedAt: receivedAt, MutationID: mutationID}); err != nil {
			return err
		}
		row, err := q.RecordApplyChange(ctx, db.RecordApplyChangeParams{
			RestaurantID: u.RestaurantID, Collection: u.Collection, Sequence: seq, RecordID: u.RecordID,
			MutationID: mutationID, Data: newData, CapturedAt: rec.CapturedAt, ReceivedAt: receivedAt,
			PayloadVersion: rec.PayloadVersion, RequestSha256: fp[:],
		})
		if err != nil {
			return err
		}
		out = appliedEnvelope(row)
		return nil
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	return out, replayed, err
}

// AssetUploadCheck tells, before any byte is received, whether the record
// can take an upload: the one 404 for an unknown or deleted record, 409 when
// its data names no asset.
func (s *Store) AssetUploadCheck(ctx context.Context, restaurantID, collection, recordID string) error {
	_, _, _, err := uploadTarget(ctx, s.q, restaurantID, collection, recordID)
	return err
}

// uploadTarget reads the record an upload is for and the objectKey its
// current data names.
func uploadTarget(ctx context.Context, q *db.Queries, restaurantID, collection, recordID string) (db.Record, map[string]json.RawMessage, string, error) {
	rec, err := q.RecordGet(ctx, db.RecordGetParams{RestaurantID: restaurantID, Collection: collection, RecordID: recordID})
	if isNoRows(err) || (err == nil && rec.Deleted) {
		return rec, nil, "", apperr.ErrNotFound
	}
	if err != nil {
		return rec, nil, "", err
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(rec.Data, &data); err != nil {
		return rec, nil, "", err
	}
	var asset struct {
		ObjectKey string `json:"objectKey"`
	}
	if raw, ok := data["asset"]; !ok || json.Unmarshal(raw, &asset) != nil || asset.ObjectKey == "" {
		return rec, nil, "", apperr.New(apperr.Conflict,
			"Record %s has no asset to upload; ingest a snapshot whose data.asset names the file first.", recordID)
	}
	return rec, data, asset.ObjectKey, nil
}

// verifiedAsset is the asset object of a verified upload (spec 2.6).
func verifiedAsset(objectKey, sha, contentType string, size int64) map[string]any {
	return map[string]any{"objectKey": objectKey, "status": AssetUploaded,
		"contentType": contentType, "byteLength": size, "sha256": sha}
}

// normaliseAsset makes data.asset say what the service verified, whatever
// the device claimed: `uploaded` with the verified fields when the bytes of
// that objectKey arrived, `pending` (and nothing else) otherwise.
func normaliseAsset(ctx context.Context, q *db.Queries, m Mutation) (json.RawMessage, error) {
	var data map[string]json.RawMessage
	if err := json.Unmarshal(m.Data, &data); err != nil {
		return nil, err
	}
	raw, ok := data["asset"]
	if !ok {
		return m.Data, nil
	}
	var asset struct {
		ObjectKey string `json:"objectKey"`
	}
	if err := json.Unmarshal(raw, &asset); err != nil {
		return nil, err
	}
	up, err := q.AssetUploadGet(ctx, db.AssetUploadGetParams{RestaurantID: m.RestaurantID, Collection: m.Collection,
		RecordID: m.RecordID, ObjectKey: asset.ObjectKey})
	var v any = map[string]any{"objectKey": asset.ObjectKey, "status": AssetPending}
	switch {
	case err == nil:
		v = verifiedAsset(up.ObjectKey, up.Sha256, up.ContentType, up.ByteLength)
	case !isNoRows(err):
		return nil, err
	}
	if data["asset"], err = json.Marshal(v); err != nil {
		return nil, err
	}
	return json.Marshal(data)
}

// AssetList returns the record's verified asset, if its current data names
// one: nothing for a pending asset or a deleted record, the one 404 for an
// unknown record.
func (s *Store) AssetList(ctx context.Context, restaurantID, collection, recordID string) ([]model.FileItem, error) {
	r, err := s.q.AssetListForRecord(ctx, db.AssetListForRecordParams{RestaurantID: restaurantID, Collection: collection, RecordID: recordID})
	if isNoRows(err) {
		return nil, apperr.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if r.Deleted || r.ObjectKey == nil {
		return []model.FileItem{}, nil
	}
	return []model.FileItem{{ID: *r.ObjectKey, ContentType: *r.ContentType, ByteLength: *r.ByteLength,
		SHA256: *r.Sha256, UploadedAt: model.Millis(*r.UploadedAt)}}, nil
}

// DeliveryImagePut records a verified delivery photograph. The same bytes
// again are a replay; other bytes for an existing image id a conflict; an
// unknown delivery the one 404.
func (s *Store) DeliveryImagePut(ctx context.Context, restaurantID, deliveryID, imageID string, u Upload, uploadedAt int64) (model.FileItem, bool, error) {
	row, err := s.q.DeliveryImageInsert(ctx, db.DeliveryImageInsertParams{RestaurantID: restaurantID, DeliveryID: deliveryID,
		ImageID: imageID, Sha256: u.SHA256, ContentType: u.ContentType, ByteLength: u.ByteLength, UploadedAt: uploadedAt})
	if err == nil {
		return imageItem(row), false, nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" { // foreign_key_violation: no such delivery
		return model.FileItem{}, false, apperr.ErrNotFound
	}
	if !isNoRows(err) {
		return model.FileItem{}, false, err
	}
	prev, err := s.q.DeliveryImageGet(ctx, db.DeliveryImageGetParams{RestaurantID: restaurantID, DeliveryID: deliveryID, ImageID: imageID})
	if err != nil {
		return model.FileItem{}, false, err
	}
	if prev.Sha256 != u.SHA256 {
		return model.FileItem{}, false, apperr.New(apperr.Conflict,
			"Image %s of delivery %s was already uploaded with other bytes (sha256 %s); images are immutable.", imageID, deliveryID, prev.Sha256)
	}
	return imageItem(prev), true, nil
}

func imageItem(r db.DeliveryImage) model.FileItem {
	return model.FileItem{ID: r.ImageID, ContentType: r.ContentType, ByteLength: r.ByteLength,
		SHA256: r.Sha256, UploadedAt: model.Millis(r.UploadedAt)}
}

// DeliveryImageList lists a delivery's images by id; the one 404 for an
// unknown delivery.
func (s *Store) DeliveryImageList(ctx context.Context, restaurantID, deliveryID string) ([]model.FileItem, error) {
	rows, err := s.q.DeliveryImageList(ctx, db.DeliveryImageListParams{RestaurantID: restaurantID, DeliveryID: deliveryID})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, apperr.ErrNotFound
	}
	out := []model.FileItem{}
	for _, r := range rows {
		if r.ImageID == nil {
			continue // the delivery exists and has no image
		}
		out = append(out, model.FileItem{ID: *r.ImageID, ContentType: *r.ContentType, ByteLength: *r.ByteLength,
			SHA256: *r.Sha256, UploadedAt: model.Millis(*r.UploadedAt)})
	}
	return out, nil
}

// changeEnvelope is the wire form of a logged change.
func changeEnvelope(c db.RecordChange) model.Envelope {
	return envelope(c.RestaurantID, c.Collection, c.RecordID, c.Sequence, c.MutationID, c.Deleted,
		c.Data, c.CapturedAt, c.ReceivedAt, c.SourceVersion, c.PayloadVersion)
}
