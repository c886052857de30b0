package cursor

import (
	"slices"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/store"
)

// The cursors of GET /v1/changes, the key-wide listing of changed streams
// (KindStreamChanges), continue a listing (nextCursor) or start the next
// (changesCursor). They are bound to nothing but the key's grants (see
// streamChangesPos.Readable), accept any page size and never expire.

// streamChangesPos is what a GET /v1/changes cursor carries.
type streamChangesPos struct {
	// Since: the listing reports streams written by transactions this
	// snapshot could not see (the zero snapshot: every stream).
	Since snapshotPos `json:"s"`
	// Horizon: where the next listing starts, fixed by the listing's first
	// page; nil in a changesCursor (the next listing's first page sets it).
	Horizon *snapshotPos `json:"h,omitempty"`
	// AfterRestaurant, AfterStream: the last stream a page returned.
	AfterRestaurant string `json:"r,omitempty"`
	AfterStream     string `json:"t,omitempty"`
	// Readable fingerprints the streams the key could read when the cursor
	// was issued. When its grants changed since, the listing starts over
	// from the beginning: a stream it just gained may have changed before
	// the cursor's position, and must be reported all the same.
	Readable string `json:"f"`
}

// Valid reports a position the service could have issued.
func (p *streamChangesPos) Valid() bool {
	switch {
	case !p.Since.valid() || (p.Horizon != nil && !p.Horizon.valid()):
		return false
	case p.AfterRestaurant == "" && p.AfterStream == "":
		return true
	case !ids.Valid(p.AfterRestaurant) || p.Horizon == nil:
		return false
	}
	_, ok := catalog.Lookup(p.AfterStream)
	return ok || p.AfterStream == store.DeliveryStream
}

// snapshotPos is a store.Snapshot in a cursor.
type snapshotPos struct {
	Xmin int64   `json:"n,omitempty"`
	Xmax int64   `json:"x,omitempty"`
	Xip  []int64 `json:"i,omitempty"`
}

func (p snapshotPos) snapshot() store.Snapshot {
	return store.Snapshot{Xmin: p.Xmin, Xmax: p.Xmax, Xip: p.Xip}
}

// valid: a snapshot the database could have taken (xmin <= xip < xmax).
func (p snapshotPos) valid() bool {
	if p.Xmin < 0 || p.Xmax < p.Xmin {
		return false
	}
	for _, x := range p.Xip {
		if x < p.Xmin || x >= p.Xmax {
			return false
		}
	}
	return true
}

// maxCursorXip bounds the running transactions a cursor carries; beyond
// it the position keeps only the oldest (xmax becomes the oldest left
// out), which lags, so repeats more, and never skips.
const maxCursorXip = 200

func positionOf(s store.Snapshot) *snapshotPos {
	p := &snapshotPos{Xmin: s.Xmin, Xmax: s.Xmax, Xip: s.Xip}
	if len(p.Xip) > maxCursorXip {
		slices.Sort(p.Xip)
		p.Xmax, p.Xip = p.Xip[maxCursorXip], p.Xip[:maxCursorXip]
	}
	return p
}

// StreamsFrom is where a page of a listing of changed streams starts, as
// its cursor says.
type StreamsFrom struct {
	pos streamChangesPos
}

// Since: the page reports streams written by transactions this snapshot
// could not see (the zero snapshot: every stream).
func (f StreamsFrom) Since() store.Snapshot { return f.pos.Since.snapshot() }

// After is the last stream the previous page returned, by restaurant and
// stream ("" on a listing's first page).
func (f StreamsFrom) After() (restaurant, stream string) {
	return f.pos.AfterRestaurant, f.pos.AfterStream
}

// OpenStreamChanges reads the cursor of a page of the listing of changed
// streams of a key whose readable streams have fingerprint readable. A
// cursor issued before the key's grants changed starts over: a stream the
// key just gained may have changed before the cursor's position.
func (i *Issuer) OpenStreamChanges(readable, raw string, given bool) (StreamsFrom, error) {
	var pos streamChangesPos
	ok, err := i.open(KindStreamChanges, raw, given, nil, &pos)
	if err != nil {
		return StreamsFrom{}, err
	}
	if !ok || pos.Readable != readable {
		pos = streamChangesPos{Readable: readable}
	}
	return StreamsFrom{pos: pos}, nil
}

// PinStreamChanges fixes, on a listing's first page, where the next
// listing starts: now, the database's horizon before this page reads. A
// position beyond now was issued for data that no longer exists, and is
// refused.
func (i *Issuer) PinStreamChanges(from *StreamsFrom, now store.Snapshot) error {
	p := &from.pos
	if p.Since.Xmax > now.Xmax || (p.Horizon != nil && p.Horizon.Xmax > now.Xmax) {
		return i.Ahead(KindStreamChanges)
	}
	if p.Horizon == nil {
		p.Horizon = positionOf(now)
	}
	return nil
}

// sealStreamChangesSince makes the changesCursor of a listing that
// reports what was written since snapshot since, for a key whose readable
// streams have fingerprint readable.
func (i *Issuer) sealStreamChangesSince(readable string, since snapshotPos) (string, error) {
	return i.codec.Seal(string(KindStreamChanges), nil, streamChangesPos{Since: since, Readable: readable}, 0)
}

// SealStreamChanges makes the cursor following a page read from from:
// with last, the last stream of a page that has more after it, the
// nextCursor continuing the listing; without, the changesCursor of the
// next listing.
func (i *Issuer) SealStreamChanges(from StreamsFrom, last *store.StreamHead) (string, error) {
	seal := streamChangesPos{Readable: from.pos.Readable}
	if from.pos.Horizon != nil {
		seal.Since = *from.pos.Horizon
	}
	if last != nil {
		seal = from.pos
		seal.AfterRestaurant, seal.AfterStream = last.RestaurantID, last.Stream
	}
	return i.codec.Seal(string(KindStreamChanges), nil, seal, 0)
}
