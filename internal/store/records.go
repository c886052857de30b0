package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/db"
	"github.com/foodsafe/foodsafe/internal/model"
)

// Mutation is one validated snapshot to ingest.
type Mutation struct {
	RestaurantID string
	Collection   string
	RecordID     string
	MutationID   string
	Deleted      bool
	// Data is the record's JSON; nil for a tombstone.
	Data           json.RawMessage
	CapturedAt     int64
	PayloadVersion int32
	// RequestSHA256 fingerprints the request body, to tell replays from
	// conflicting reuse of a mutation id.
	RequestSHA256 []byte
	// CarriesFiles marks the collections whose data.asset status the
	// service owns (see normaliseAsset).
	CarriesFiles bool
}

// errRaced: an identical mutation committed while this one waited.
var errRaced = errors.New("mutation id taken concurrently")

// RecordIngest applies a mutation: it takes the next sequence of the
// stream, appends the change and makes it the record's current state, in
// one transaction. A mutation id seen before answers as it did the first
// time (replayed=true) when the request is the same, and is a conflict
// otherwise. Identical requests racing each other apply exactly once.
func (s *Store) RecordIngest(ctx context.Context, m Mutation, receivedAt int64) (model.Envelope, bool, error) {
	var out model.Envelope
	var replayed bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := s.q.WithTx(tx)
		prev, err := q.RecordChangeByMutation(ctx, db.RecordChangeByMutationParams{RestaurantID: m.RestaurantID, MutationID: m.MutationID})
		if err == nil {
			out, err = replayOf(prev, m)
			replayed = err == nil
			return err
		}
		if !isNoRows(err) {
			return err
		}
		seq, err := q.StreamNextSequence(ctx, db.StreamNextSequenceParams{RestaurantID: m.RestaurantID, Collection: m.Collection})
		if err != nil {
			return err
		}
		data := m.Data
		if m.CarriesFiles && !m.Deleted {
			// Under the stream lock: an upload of this record has either
			// committed (and is reflected) or waits for us.
			if data, err = normaliseAsset(ctx, q, m); err != nil {
				return err
			}
		}
		row, err := q.RecordApplyChange(ctx, db.RecordApplyChangeParams{
			RestaurantID: m.RestaurantID, Collection: m.Collection, Sequence: seq, RecordID: m.RecordID,
			MutationID: m.MutationID, Deleted: m.Deleted, Data: data, CapturedAt: m.CapturedAt,
			ReceivedAt: receivedAt, PayloadVersion: m.PayloadVersion, RequestSha256: m.RequestSHA256,
		})
		if isNoRows(err) {
			return errRaced // rolls back the sequence taken above
		}
		if err != nil {
			return err
		}
		out = appliedEnvelope(row)
		return nil
	})
	if errors.Is(err, errRaced) {
		prev, err := s.q.RecordChangeByMutation(ctx, db.RecordChangeByMutationParams{RestaurantID: m.RestaurantID, MutationID: m.MutationID})
		if err != nil {
			return model.Envelope{}, false, err
		}
		out, err := replayOf(prev, m)
		return out, err == nil, err
	}
	return out, replayed, err
}

// replayOf answers a mutation id already used: the stored envelope when the
// request is the same one, a conflict otherwise.
func replayOf(prev db.RecordChange, m Mutation) (model.Envelope, error) {
	if prev.Collection != m.Collection || prev.RecordID != m.RecordID || !bytes.Equal(prev.RequestSha256, m.RequestSHA256) {
		return model.Envelope{}, apperr.New(apperr.Conflict,
			"mutationId %s was already used for a different change (other content, record or collection); use a new mutationId for a new change.", m.MutationID)
	}
	return changeEnvelope(prev), nil
}

// RecordGet reads a record's current state, tombstones included.
func (s *Store) RecordGet(ctx context.Context, restaurantID, collection, recordID string) (model.Envelope, error) {
	r, err := s.q.RecordGet(ctx, db.RecordGetParams{RestaurantID: restaurantID, Collection: collection, RecordID: recordID})
	if isNoRows(err) {
		return model.Envelope{}, apperr.ErrNotFound
	}
	if err != nil {
		return model.Envelope{}, err
	}
	return envelope(r.RestaurantID, r.Collection, r.RecordID, r.Sequence, r.MutationID, r.Deleted,
		r.Data, r.CapturedAt, r.ReceivedAt, r.SourceVersion, r.PayloadVersion), nil
}

// WalkPos is where a walk stands: pinned at stream position Pinned, having
// returned everything up to sequence After.
type WalkPos struct {
	Pinned int64 `json:"p"`
	After  int64 `json:"a"`
}

// RecordWalk reads one page of a snapshot walk: records as they stood at
// the pinned position, by sequence ascending. The first page (pos nil) pins
// the stream's current head. next is nil on the last page; one extra row
// is read so a page that ends the walk exactly says so.
func (s *Store) RecordWalk(ctx context.Context, restaurantID, collection string, limit int, pos *WalkPos) (page []model.Envelope, next *WalkPos, err error) {
	p := db.RecordWalkPageParams{RestaurantID: restaurantID, Collection: collection, MaxRows: int32(limit + 1)}
	if pos != nil {
		p.Pinned, p.AfterSequence = &pos.Pinned, pos.After
	}
	rows, err := s.q.RecordWalkPage(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	// Merge the two branches (current versions; versions as of the pin).
	slices.SortFunc(rows, func(a, b db.RecordWalkPageRow) int { return cmp.Compare(a.Sequence, b.Sequence) })
	if len(rows) > limit {
		rows = rows[:limit]
		next = &WalkPos{Pinned: rows[0].Pinned, After: rows[limit-1].Sequence}
	}
	page = make([]model.Envelope, len(rows))
	for i, r := range rows {
		page[i] = envelope(restaurantID, collection, r.RecordID, r.Sequence, r.MutationID, r.Deleted,
			r.Data, r.CapturedAt, r.ReceivedAt, r.SourceVersion, r.PayloadVersion)
	}
	return page, next, nil
}

// appliedEnvelope is the wire form of a change just applied.
func appliedEnvelope(r db.RecordApplyChangeRow) model.Envelope {
	return envelope(r.RestaurantID, r.Collection, r.RecordID, r.Sequence, r.MutationID, r.Deleted,
		r.Data, r.CapturedAt, r.ReceivedAt, r.SourceVersion, r.PayloadVersion)
}

// envelope assembles the wire form of a stored version.
func envelope(restaurantID, collection, recordID string, seq int64, mutationID string, deleted bool,
	data []byte, capturedAt, receivedAt int64, sourceVersion *string, payloadVersion int32) model.Envelope {
	e := model.Envelope{
		ID: recordID, RestaurantID: restaurantID, Collection: collection, Deleted: deleted,
		CapturedAt: model.Millis(capturedAt), ReceivedAt: model.Millis(receivedAt), Sequence: model.Sequence(seq),
		MutationID: mutationID, SourceVersion: sourceVersion, PayloadVersion: payloadVersion, StateKind: model.StateKind,
	}
	if !deleted && len(data) > 0 {
		e.Data = json.RawMessage(data)
	}
	return e
}
