package cursor

import (
	"strconv"
	"time"

	"github.com/foodsafe/foodsafe/internal/store"
)

// A collection walk takes two kinds of cursor in one parameter. Its
// nextCursor (KindRecords) continues one walk and is bound to the
// restaurant, collection and limit; its changesCursor (KindChanges) starts
// the next walk and is bound to the restaurant and collection only, so a
// client may page each changes walk with whatever limit suits it.

// Walk names the walk of one collection with one page size.
type Walk struct {
	Restaurant, Collection string
	Limit                  int
}

func (w Walk) bind() []string {
	return []string{w.Restaurant, w.Collection, strconv.Itoa(w.Limit)}
}

func (w Walk) changesBind() []string { return []string{w.Restaurant, w.Collection} }

// WalkFrom is where a page of a walk starts, as its cursor says.
type WalkFrom struct {
	// After continues a walk from this position; nil on a walk's first
	// page.
	After *store.WalkPos
	// Changes: the first page of a changes walk, of what changed since
	// stream position Since.
	Changes bool
	Since   int64
	// Until is when the walk's nextCursors stop working.
	Until time.Time
}

// changesPos is what a changesCursor carries: the position the walk that
// issued it was pinned at.
type changesPos struct {
	Since int64 `json:"s"`
}

// Valid reports a position a walk could have issued.
func (p *changesPos) Valid() bool { return p.Since >= 0 }

// walkPos is what a nextCursor carries: where the walk stands (pinned at
// stream position Pinned, having returned everything up to sequence
// After), and until when its cursors are valid (unix seconds): the walk
// TTL after the walk's first page, however many pages follow. A walk
// therefore never reads a version older than that, which is what lets the
// compaction job drop the data of versions superseded longer ago
// (FOODSAFE_COMPACT_AFTER, longer than the TTL). Cursors issued before
// Until existed carry none; their walk ends when the cursor presented
// expires.
type walkPos struct {
	Pinned int64 `json:"p"`
	After  int64 `json:"a"`
	Until  int64 `json:"u,omitempty"`
}

// Valid reports a position a walk could have issued: stream positions are
// never negative, and a walk never stands past where it is pinned (every
// record it returns was written at or before the pin).
func (p *walkPos) Valid() bool {
	return p.Pinned >= 0 && p.After >= 0 && p.After <= p.Pinned && p.Until >= 0
}

// OpenWalk reads the cursor of a page of w: none starts a full walk, a
// nextCursor continues its walk, a changesCursor starts a changes walk.
// The cursor is verified and decoded once, whichever kind it is.
func (i *Issuer) OpenWalk(w Walk, raw string, given bool) (WalkFrom, error) {
	fresh := WalkFrom{Until: i.codec.Now().Add(i.walkTTL)}
	if !given {
		return fresh, nil
	}
	sealed, err := i.codec.Unseal(raw)
	if err != nil {
		return WalkFrom{}, i.refuse(KindRecords, err)
	}
	if Kind(sealed.Kind()) == KindChanges {
		var pos changesPos
		if err := i.decode(KindChanges, sealed, w.changesBind(), &pos); err != nil {
			return WalkFrom{}, err
		}
		fresh.Changes, fresh.Since = true, pos.Since
		return fresh, nil
	}
	var pos walkPos
	if err := i.decode(KindRecords, sealed, w.bind(), &pos); err != nil {
		return WalkFrom{}, err
	}
	until := time.Unix(pos.Until, 0)
	if pos.Until == 0 {
		// Issued before walks carried their end: it ends with this
		// cursor's own expiry, never later.
		if until = sealed.Expires(); until.IsZero() {
			return WalkFrom{}, i.refuse(KindRecords, ErrMalformed)
		}
	}
	return WalkFrom{After: &store.WalkPos{Pinned: pos.Pinned, After: pos.After}, Until: until}, nil
}

// SealWalk makes the cursors of a page of w read from from: nextCursor
// while the walk goes on, the changesCursor of the next walk on its last
// page (next nil), pinned where this walk is.
func (i *Issuer) SealWalk(w Walk, from WalkFrom, next *store.WalkPos, pinned int64) (nextCursor, changesCursor *string, err error) {
	if next != nil {
		cur, err := i.codec.SealUntil(string(KindRecords), w.bind(), walkPos{Pinned: next.Pinned, After: next.After, Until: from.Until.Unix()}, from.Until)
		if err != nil {
			return nil, nil, err
		}
		return &cur, nil, nil
	}
	cur, err := i.SealWalkChanges(w.Restaurant, w.Collection, pinned)
	if err != nil {
		return nil, nil, err
	}
	return nil, &cur, nil
}

// SealWalkChanges makes the changesCursor of a walk of restaurant's
// collection that was pinned at pinned: the cursor of its last page.
func (i *Issuer) SealWalkChanges(restaurant, collection string, pinned int64) (string, error) {
	return i.codec.Seal(string(KindChanges), Walk{Restaurant: restaurant, Collection: collection}.changesBind(), changesPos{Since: pinned}, 0)
}
