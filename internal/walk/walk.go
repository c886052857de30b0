// Package walk answers one page of a collection walk from the cursor a
// client sent: a full walk, its continuation, or a changes walk started
// from the changesCursor of an earlier walk. It is the one place that
// decides what a walk cursor means and what its refusals say, so every face
// of the service that walks records (the REST route, a tool of an MCP
// endpoint) walks the same way and a cursor issued by one works in another.
package walk

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Cursor kinds. A nextCursor continues one walk and is bound to the
// restaurant, collection and limit; a changesCursor starts the next walk
// and is bound to the restaurant and collection only, so a client may page
// each changes walk with whatever limit suits it.
const (
	KindRecords = "records"
	KindChanges = "changes"
)

// fullWalk ends every refusal: the remedy is always the same.
const fullWalk = "start a new walk (a full walk, without a cursor)"

// Walker pages walks.
type Walker struct {
	store   *store.Store
	cursors *cursor.Codec
	// metrics counts pages and refused cursors (nil: off).
	metrics *metrics.Metrics
	// ttl is the lifetime of a walk's nextCursors (FOODSAFE_CURSOR_TTL),
	// counted from the walk's first page. A changesCursor never expires:
	// it needs only current states and tombstones, which the service keeps
	// for as long as the stream exists.
	ttl time.Duration
}

// New makes a walker; m may be nil.
func New(st *store.Store, cursors *cursor.Codec, ttl time.Duration, m *metrics.Metrics) *Walker {
	return &Walker{store: st, cursors: cursors, ttl: ttl, metrics: m}
}

// changesPos is what a changesCursor carries: the position the walk that
// issued it was pinned at.
type changesPos struct {
	Since int64 `json:"s"`
}

// Valid reports a position a walk could have issued.
func (p *changesPos) Valid() bool { return p.Since >= 0 }

// walkPos is what a nextCursor carries: where the walk stands, and until
// when its cursors are valid (unix seconds): FOODSAFE_CURSOR_TTL after the
// walk's first page, however many pages follow. A walk therefore never
// reads a version older than that, which is what lets the compaction job
// drop the data of versions superseded longer ago (FOODSAFE_COMPACT_AFTER,
// longer than the TTL). Cursors issued before Until existed carry none;
// their walk ends when the cursor presented expires.
type walkPos struct {
	store.WalkPos
	Until int64 `json:"u,omitempty"`
}

// Valid reports a position a walk could have issued.
func (p *walkPos) Valid() bool { return p.WalkPos.Valid() && p.Until >= 0 }

// Page answers one page of a walk of (restaurantID, collection) with limit
// records at most. raw is the client's cursor as received: empty starts a
// full walk, a nextCursor continues its walk, a changesCursor starts a
// changes walk (what changed since the walk that issued it). The page
// carries nextCursor until the walk's last page, which carries the
// changesCursor of the next changes walk instead.
func (w *Walker) Page(ctx context.Context, restaurantID, collection string, limit int, raw string) (wire.WalkPage, error) {
	bind := []string{restaurantID, collection, strconv.Itoa(limit)}
	page, walk, until, err := w.read(ctx, restaurantID, collection, limit, bind, raw)
	if err != nil {
		return wire.WalkPage{}, err
	}
	w.metrics.WalkPage(walk, raw == "" || walk == metrics.WalkChanges, len(page.Records))
	out := wire.WalkPage{Data: page.Records}
	if page.Next != nil {
		next, err := w.cursors.SealUntil(KindRecords, bind, walkPos{WalkPos: *page.Next, Until: until.Unix()}, until)
		if err != nil {
			return wire.WalkPage{}, err
		}
		out.NextCursor = &next
		return out, nil
	}
	changes, err := w.cursors.Seal(KindChanges, []string{restaurantID, collection}, changesPos{Since: page.Pinned}, 0)
	if err != nil {
		return wire.WalkPage{}, err
	}
	out.ChangesCursor = &changes
	return out, nil
}

// read opens the cursor for its kind and reads the page it names, saying
// which walk it is (for metrics: a changes walk's first page is a changes
// page; its later pages continue with ordinary walk cursors) and until
// when the walk's cursors are valid.
func (w *Walker) read(ctx context.Context, restaurantID, collection string, limit int, bind []string, raw string) (store.WalkPage, metrics.Walk, time.Time, error) {
	fresh := w.cursors.Now().Add(w.ttl)
	if raw == "" {
		page, err := w.store.RecordWalk(ctx, restaurantID, collection, limit, nil)
		return page, metrics.WalkRecords, fresh, err
	}
	kind, err := w.cursors.Kind(raw)
	if err != nil {
		w.metrics.CursorRefused(metrics.WalkRecords, metrics.CursorMalformed)
		return store.WalkPage{}, "", time.Time{}, MalformedCursor()
	}
	if kind != KindChanges {
		var pos walkPos
		if err := w.cursors.Open(raw, KindRecords, bind, &pos); err != nil {
			return store.WalkPage{}, "", time.Time{}, w.refusal(metrics.WalkRecords, err)
		}
		until := time.Unix(pos.Until, 0)
		if pos.Until == 0 {
			// Issued before walks carried their end: it ends with this
			// cursor's own expiry, never later.
			if until, err = w.cursors.Expires(raw); err != nil || until.IsZero() {
				return store.WalkPage{}, "", time.Time{}, MalformedCursor()
			}
		}
		page, err := w.store.RecordWalk(ctx, restaurantID, collection, limit, &pos.WalkPos)
		return page, metrics.WalkRecords, until, err
	}
	var pos changesPos
	if err := w.cursors.Open(raw, KindChanges, []string{restaurantID, collection}, &pos); err != nil {
		if errors.Is(err, cursor.ErrMismatch) {
			w.metrics.CursorRefused(metrics.WalkChanges, metrics.CursorMismatch)
			return store.WalkPage{}, "", time.Time{}, apperr.Param("cursor",
				"is the changesCursor of another restaurant or collection; keep one changesCursor per restaurant and collection, or %s", fullWalk)
		}
		return store.WalkPage{}, "", time.Time{}, w.refusal(metrics.WalkChanges, err)
	}
	page, err := w.store.RecordChanges(ctx, restaurantID, collection, limit, pos.Since)
	if errors.Is(err, store.ErrAheadOfStream) {
		w.metrics.CursorRefused(metrics.WalkChanges, metrics.CursorAhead)
		// Said without the stream's position: a refusal must not tell a
		// client anything about the data it could not read.
		return store.WalkPage{}, "", time.Time{}, apperr.Param("cursor",
			"names a position this collection has not reached (its data was restored or reset since); %s and rebuild your copy from it", fullWalk)
	}
	return page, metrics.WalkChanges, fresh, err
}

// refusal is the 400 for a walk cursor that cannot be used.
func (w *Walker) refusal(walk metrics.Walk, err error) error {
	switch {
	case errors.Is(err, cursor.ErrMismatch):
		w.metrics.CursorRefused(walk, metrics.CursorMismatch)
		return apperr.Param("cursor", "was issued for other parameters; keep the restaurant, collection and limit identical for a whole walk, or %s", fullWalk)
	case errors.Is(err, cursor.ErrExpired):
		w.metrics.CursorRefused(walk, metrics.CursorExpired)
		return apperr.Param("cursor", "has expired; %s, or walk again from the changesCursor of your last complete walk", fullWalk)
	default:
		w.metrics.CursorRefused(walk, metrics.CursorMalformed)
		return MalformedCursor()
	}
}

// MalformedCursor is the 400 for a cursor this service did not issue
// (garbage, truncated, altered, signed with another key, or empty).
func MalformedCursor() error {
	return apperr.Param("cursor", "is not a cursor issued by this service (garbage, truncated or altered); pass nextCursor or changesCursor unchanged, or %s", fullWalk)
}
