package cursor

import (
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/metrics"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/store"
)

// The cursors of GET /v1/records, the key-wide records feed
// (KindRecordFeed), continue a feed: the stream it stands in or after,
// and inside a collection stream the walk's pin and position. Like the
// cursors of GET /v1/changes they are bound to the key's readable streams
// (a feed whose key's grants changed starts over from the beginning: a
// stream it gained may sort before the position) and accept any page
// size. Like a walk's nextCursor they expire: the walk TTL after the feed
// started its current stream, so a pinned stream never reads versions
// older than a walk may (which is what lets compaction drop them).

// feedPos is what a records feed cursor carries. Its JSON names are its
// own (short, fixed for as long as clients hold cursors; golden_test.go):
// no store type is sealed in it.
type feedPos struct {
	// Readable fingerprints the streams the key could read.
	Readable string `json:"f"`
	// Horizon: where the feed's final changesCursor lists from, taken on
	// its first page before anything was read.
	Horizon snapshotPos `json:"h"`
	// Restaurant, Stream: the stream the feed stands after, or inside
	// when Inside is set; both empty before the first stream.
	Restaurant string `json:"r,omitempty"`
	Stream     string `json:"t,omitempty"`
	Inside     bool   `json:"i,omitempty"`
	// Pinned, After: the position inside the stream: a collection walk's
	// pin and the sequence of the last record returned; for the
	// deliveries, After is the receive position of the last delivery
	// returned.
	Pinned int64 `json:"p,omitempty"`
	After  int64 `json:"a,omitempty"`
	// Until: when the cursors of the current stream stop working (unix
	// seconds).
	Until int64 `json:"u"`
	// Since, on a feed of what changed (GET /v1/records?since=): the
	// position of the GET /v1/changes changesCursor it started from; the
	// feed reads, of each stream written since, what was written since.
	Since *snapshotPos `json:"s,omitempty"`
}

// Valid reports a position the service could have issued.
func (p *feedPos) Valid() bool {
	switch {
	case !p.Horizon.valid() || p.Pinned < 0 || p.After < 0 || p.Until < 0 || (p.Since != nil && !p.Since.valid()):
		return false
	case p.Restaurant == "" && p.Stream == "":
		return !p.Inside && p.Pinned == 0 && p.After == 0
	case !ids.Valid(p.Restaurant):
		return false
	case p.Stream == store.DeliveryStream:
		return p.Pinned == 0
	}
	// Inside a collection, the walk's rule: it never stands past its pin.
	_, ok := catalog.Lookup(p.Stream)
	return ok && p.After <= p.Pinned
}

// FeedFrom is where a page of the records feed starts, as its cursor
// says.
type FeedFrom struct {
	pos feedPos
	// fresh: no usable cursor; the feed starts at its beginning.
	fresh bool
	// opened: when the page's cursor was read, before the page pins any
	// stream: a stream the page starts lasts the walk TTL from then, so
	// it never outlives a version its pin needs (see walkPos).
	opened time.Time
}

// Fresh reports a feed's first page (no cursor, or one issued before the
// key's grants changed): it needs its horizon (PinRecordFeed).
func (f FeedFrom) Fresh() bool { return f.fresh }

// Since is the position a feed of what changed reads from (nil: the
// feed of everything).
func (f FeedFrom) Since() *store.Snapshot {
	if f.pos.Since == nil {
		return nil
	}
	s := f.pos.Since.snapshot()
	return &s
}

// At is where the page starts in the store's terms.
func (f FeedFrom) At() store.FeedAt {
	at := store.FeedAt{RestaurantID: f.pos.Restaurant, Stream: f.pos.Stream}
	if f.pos.Inside {
		at.In = &store.WalkPos{Pinned: f.pos.Pinned, After: f.pos.After}
	}
	return at
}

// OpenRecordFeed reads the cursor of a page of the records feed of a key
// whose readable streams have fingerprint readable. A cursor issued
// before the key's grants changed starts the feed over.
func (i *Issuer) OpenRecordFeed(readable, raw string, given bool) (FeedFrom, error) {
	var pos feedPos
	opened := i.codec.Now()
	ok, err := i.open(KindRecordFeed, raw, given, nil, &pos)
	if err != nil {
		return FeedFrom{}, err
	}
	if !ok || pos.Readable != readable {
		return FeedFrom{pos: feedPos{Readable: readable}, fresh: true, opened: opened}, nil
	}
	return FeedFrom{pos: pos, opened: opened}, nil
}

// OpenRecordFeedSince starts a feed of what changed since the position
// of raw, the changesCursor of a GET /v1/changes listing's last page (or
// of a feed's last page), for a key whose readable streams have
// fingerprint readable. Only such a cursor is taken: a nextCursor of a
// listing stands inside it; a cursor issued before the key's grants
// changed is refused (a stream the key gained since holds records written
// before the position, which a feed of changes would not bring): read the
// feed from its beginning, or list GET /v1/changes, which starts over.
func (i *Issuer) OpenRecordFeedSince(readable, raw string) (FeedFrom, error) {
	var cp streamChangesPos
	opened := i.codec.Now()
	sealed, err := i.codec.Unseal(raw)
	if err == nil {
		err = i.codec.Decode(sealed, string(KindStreamChanges), nil, &cp)
	}
	switch {
	case err != nil || cp.Horizon != nil || cp.AfterRestaurant != "":
		i.metrics.CursorRefused(metrics.WalkRecords, metrics.CursorMalformed)
		return FeedFrom{}, apperr.Param("since", "is not the changesCursor of the last page of GET /v1/changes or "+
			"GET /v1/records (garbage, truncated, altered, or a nextCursor); pass it unchanged, or read the feed without since")
	case cp.Readable != readable:
		i.metrics.CursorRefused(metrics.WalkRecords, metrics.CursorMismatch)
		return FeedFrom{}, apperr.Param("since", "was issued before the key's grants changed: a stream the key gained "+
			"holds records written before it; read the feed without since (or list GET /v1/changes, which starts over)")
	}
	since := cp.Since
	return FeedFrom{pos: feedPos{Readable: readable, Since: &since}, fresh: true, opened: opened}, nil
}

// SinceAhead refuses, on the first page of a feed of what changed, a
// position beyond now: it was issued for data that no longer exists (a
// restore). nil for any other page.
func (i *Issuer) SinceAhead(from FeedFrom, now store.Snapshot) error {
	if from.pos.Since != nil && from.pos.Since.Xmax > now.Xmax {
		i.metrics.CursorRefused(metrics.WalkRecords, metrics.CursorAhead)
		return apperr.Param("since", "names a position this service has not reached (its data was restored or reset "+
			"since); read the feed without since and compare each stream's head with your copy")
	}
	return nil
}

// PinRecordFeed fixes, on a feed's first page, where its final
// changesCursor lists from: now, the database's horizon before the page
// reads, so every stream written during the feed is listed by it.
func (i *Issuer) PinRecordFeed(from *FeedFrom, now store.Snapshot) {
	from.pos.Horizon = *positionOf(now)
}

// SealRecordFeed makes the nextCursor continuing the feed at next. A
// position inside the stream the page started in keeps that stream's
// lifetime; any other starts a new one.
func (i *Issuer) SealRecordFeed(from FeedFrom, next store.FeedAt) (string, error) {
	pos := feedPos{Readable: from.pos.Readable, Horizon: from.pos.Horizon, Restaurant: next.RestaurantID, Stream: next.Stream,
		Since: from.pos.Since}
	until := from.opened.Add(i.walkTTL)
	if next.In != nil {
		pos.Inside, pos.Pinned, pos.After = true, next.In.Pinned, next.In.After
		if from.pos.Inside && from.pos.Restaurant == next.RestaurantID && from.pos.Stream == next.Stream {
			until = time.Unix(from.pos.Until, 0)
		}
	}
	pos.Until = until.Unix()
	return i.codec.SealUntil(string(KindRecordFeed), nil, pos, until)
}

// SealRecordFeedChanges makes the changesCursor of a feed's last page: a
// cursor of GET /v1/changes listing every stream written since the feed
// began.
func (i *Issuer) SealRecordFeedChanges(from FeedFrom) (string, error) {
	return i.sealStreamChangesSince(from.pos.Readable, from.pos.Horizon)
}
