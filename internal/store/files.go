package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Upload is a verified file: its bytes are in blob storage under SHA256.
type Upload struct {
	// ObjectKey is the file of the record the bytes were sent for (record
	// assets only; delivery images are named by their path).
	ObjectKey   string
	SHA256      string
	ContentType string
	ByteLength  int64
}

// AssetStatus values of spec 2.6.
const (
	AssetPending  = "pending"
	AssetUploaded = "uploaded"
)

// errNoChange aborts a transaction that turned out to be a replay.
var errNoChange = errors.New("replay: nothing to write")

// AssetUploadApply records that the bytes of the file u.ObjectKey arrived
// and were verified: it adds a change to the record's stream whose
// data.asset is `uploaded` with the verified contentType, byteLength and
// sha256. It runs under the stream's lock and re-reads the record there: if
// a snapshot ingested meanwhile names another file, the bytes are refused
// (409) rather than attached to the wrong file, and a newer snapshot is
// never overwritten. The same bytes again are a replay (the first answer,
// nothing written; ReplayedCompacted once the upload's change was
// compacted); other bytes for an uploaded objectKey are a conflict.
func (s *Store) AssetUploadApply(ctx context.Context, k RecordKey, u Upload, receivedAt int64) (wire.Envelope, Ingested, error) {
	var out wire.Envelope
	how := Applied
	err := s.inTxConn(ctx, func(tx pgx.Tx, q *db.Queries) error {
		next, err := q.StreamNextSequence(ctx, db.StreamNextSequenceParams{RestaurantID: k.RestaurantID, Collection: k.Collection,
			ReceivedAt: receivedAt})
		if err != nil {
			return err
		}
		seq := next.LastSequence
		rec, _, err := uploadTarget(ctx, q, k, u.ObjectKey)
		if err != nil {
			return err
		}
		objectKey := u.ObjectKey
		prev, err := q.AssetUploadGet(ctx, db.AssetUploadGetParams{RestaurantID: k.RestaurantID, Collection: k.Collection,
			RecordID: k.RecordID, ObjectKey: objectKey})
		switch ok, err := found(err); {
		case err != nil:
			return err
		case ok && prev.Sha256 == u.SHA256:
			change, err := q.RecordChangeByMutation(ctx, db.RecordChangeByMutationParams{RestaurantID: k.RestaurantID, MutationID: prev.MutationID})
			if err != nil {
				return err
			}
			out, how = changeVersion(change).envelope(), replayedAs(change)
			return errNoChange
		case ok:
			return apperr.New(apperr.Conflict, "Asset %q of record %s was already uploaded with other bytes (sha256 %s); a new file needs a new objectKey.",
				objectKey, k.RecordID, prev.Sha256)
		}

		verified, err := json.Marshal(verifiedAsset(objectKey, u.SHA256, u.ContentType, u.ByteLength))
		if err != nil {
			return err
		}
		newData, err := withMember(rec.Data, "asset", verified)
		if err != nil {
			return err
		}
		// The record's sequence makes the id new for every upload that
		// is not a replay (a replay was answered above, from its
		// asset_uploads row): the same file uploaded again after the blob
		// collector forgot a dead asset is a new change, not a taken id.
		fp := sha256.Sum256([]byte(fmt.Sprintf("asset-upload\n%s\n%s\n%s\n%s\n%d", k.Collection, k.RecordID, objectKey, u.SHA256, rec.Sequence)))
		mutationID := UploadMutationPrefix + hex.EncodeToString(fp[:16])
		if err := q.AssetUploadInsert(ctx, db.AssetUploadInsertParams{RestaurantID: k.RestaurantID, Collection: k.Collection,
			RecordID: k.RecordID, ObjectKey: objectKey, Sha256: u.SHA256, ContentType: u.ContentType,
			ByteLength: u.ByteLength, UploadedAt: receivedAt, MutationID: mutationID}); err != nil {
			return err
		}
		row, err := s.applyChange(ctx, tx, q, db.RecordChangeAppendParams{
			RestaurantID: k.RestaurantID, Collection: k.Collection, Sequence: seq, RecordID: k.RecordID,
			MutationID: mutationID, Data: newData, CapturedAt: rec.CapturedAt, ReceivedAt: next.LastReceivedAt,
			PayloadVersion: rec.PayloadVersion, RequestSha256: fp[:],
		})
		switch ok, err := found(err); {
		case err != nil:
			return err
		case !ok:
			// The mutation id is taken. Client ids cannot collide with ours
			// (UploadMutationPrefix), and an upload already applied is a
			// replay above, so this is never expected; it is still a
			// conflict, not a failure.
			return apperr.New(apperr.Conflict, "This upload's change id is already taken; nothing was written.")
		}
		out = appliedVersion(row).envelope()
		return nil
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	return out, how, translate(err)
}

// UploadMutationPrefix starts the mutation id of every change the service
// makes itself when an upload completes. Client mutation ids follow the id
// pattern, which refuses '~', so a client can never take one of ours.
const UploadMutationPrefix = "upload~"

// AssetUploadCheck tells, before any byte is received, whether the record
// can take an upload for objectKey: the one 404 for an unknown or deleted
// record, 409 when its data names no asset or another one.
func (s *Store) AssetUploadCheck(ctx context.Context, k RecordKey, objectKey string) error {
	_, _, err := uploadTarget(ctx, s.q, k, objectKey)
	return translate(err)
}

// uploadTarget reads the record an upload is for and checks that its
// current data names the file objectKey.
func uploadTarget(ctx context.Context, q *db.Queries, k RecordKey, objectKey string) (db.Record, map[string]json.RawMessage, error) {
	got, err := q.RecordGet(ctx, k.getParams())
	rec := recordOfRow(got)
	if err != nil {
		return rec, nil, translate(err)
	}
	if rec.Deleted {
		return rec, nil, apperr.ErrNotFound
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(rec.Data, &data); err != nil {
		return rec, nil, err
	}
	var asset struct {
		ObjectKey string `json:"objectKey"`
	}
	switch raw, ok := data["asset"]; {
	case !ok || json.Unmarshal(raw, &asset) != nil || asset.ObjectKey == "":
		return rec, nil, apperr.New(apperr.Conflict,
			"Record %s has no asset to upload; ingest a snapshot whose data.asset names the file first.", k.RecordID)
	case asset.ObjectKey != objectKey:
		return rec, nil, apperr.New(apperr.Conflict,
			"Record %s now names another file in data.asset.objectKey; these bytes are not attached to it. Upload the file the record names.", k.RecordID)
	}
	return rec, data, nil
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
	switch ok, err := found(err); {
	case err != nil:
		return nil, err
	case ok:
		v = verifiedAsset(up.ObjectKey, up.Sha256, up.ContentType, up.ByteLength)
	}
	owned, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return withMember(m.Data, "asset", owned)
}

// AssetList returns the record's verified asset, if its current data names
// one: nothing for a pending asset or a deleted record, the one 404 for an
// unknown record.
func (s *Store) AssetList(ctx context.Context, k RecordKey) ([]wire.FileItem, error) {
	r, err := s.q.AssetListForRecord(ctx, db.AssetListForRecordParams{RestaurantID: k.RestaurantID, Collection: k.Collection, RecordID: k.RecordID})
	if err != nil {
		return nil, translate(err)
	}
	if r.Deleted || r.ObjectKey == nil {
		return []wire.FileItem{}, nil
	}
	return []wire.FileItem{{ID: *r.ObjectKey, ContentType: *r.ContentType, ByteLength: *r.ByteLength,
		SHA256: *r.Sha256, UploadedAt: wire.Millis(*r.UploadedAt)}}, nil
}

// ImageKey names one delivery photograph.
type ImageKey struct {
	DeliveryKey
	ImageID string
}

// DeliveryImagePut records a verified delivery photograph. The same bytes
// again are a replay; other bytes for an existing image id a conflict; an
// unknown delivery the one 404.
func (s *Store) DeliveryImagePut(ctx context.Context, k ImageKey, u Upload, uploadedAt int64) (wire.FileItem, bool, error) {
	row, err := s.q.DeliveryImageInsert(ctx, db.DeliveryImageInsertParams{RestaurantID: k.RestaurantID, DeliveryID: k.DeliveryID,
		ImageID: k.ImageID, Sha256: u.SHA256, ContentType: u.ContentType, ByteLength: u.ByteLength, UploadedAt: uploadedAt})
	// No row: the image id exists already. A missing delivery fails the
	// foreign key, which translates to the one 404.
	switch ok, err := found(err); {
	case err != nil:
		return wire.FileItem{}, false, err
	case ok:
		return imageItem(row), false, nil
	}
	prev, err := s.q.DeliveryImageGet(ctx, db.DeliveryImageGetParams{RestaurantID: k.RestaurantID, DeliveryID: k.DeliveryID, ImageID: k.ImageID})
	if err != nil {
		return wire.FileItem{}, false, translate(err)
	}
	if prev.Sha256 != u.SHA256 {
		return wire.FileItem{}, false, apperr.New(apperr.Conflict,
			"Image %s of delivery %s was already uploaded with other bytes (sha256 %s); images are immutable.", k.ImageID, k.DeliveryID, prev.Sha256)
	}
	return imageItem(prev), true, nil
}

func imageItem(r db.DeliveryImage) wire.FileItem {
	return wire.FileItem{ID: r.ImageID, ContentType: r.ContentType, ByteLength: r.ByteLength,
		SHA256: r.Sha256, UploadedAt: wire.Millis(r.UploadedAt)}
}

// DeliveryImageList lists a delivery's images by id; the one 404 for an
// unknown delivery.
func (s *Store) DeliveryImageList(ctx context.Context, k DeliveryKey) ([]wire.FileItem, error) {
	rows, err := s.q.DeliveryImageList(ctx, db.DeliveryImageListParams{RestaurantID: k.RestaurantID, DeliveryID: k.DeliveryID})
	if err != nil {
		return nil, translate(err)
	}
	if len(rows) == 0 {
		return nil, apperr.ErrNotFound
	}
	out := []wire.FileItem{}
	for _, r := range rows {
		if r.ImageID == nil {
			continue // the delivery exists and has no image
		}
		out = append(out, wire.FileItem{ID: *r.ImageID, ContentType: *r.ContentType, ByteLength: *r.ByteLength,
			SHA256: *r.Sha256, UploadedAt: wire.Millis(*r.UploadedAt)})
	}
	return out, nil
}
