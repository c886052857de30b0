package httpapi

import (
	"context"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// recordFeedMaxBytes: a feed page stops adding items once their JSON
// passes about this much (always at least one item), so a page of 500
// large records stays an answer a client can hold.
const recordFeedMaxBytes = 1 << 20

// feedLimitParam reads the feed's `limit`: as other limits, up to
// wire.MaxFeedLimit. REST's default is wire.DefaultFeedLimit; MCP keeps
// its own smaller default, since every item lands in a model's context.
func feedLimitParam(r request) (int, error) {
	v, ok, err := r.params.query("limit")
	if err != nil {
		return 0, err
	}
	if !ok {
		if r.defaultLimit == restDefaultLimit {
			return wire.DefaultFeedLimit, nil
		}
		return r.defaultLimit, nil
	}
	return parseLimitUpTo(v, wire.MaxFeedLimit)
}

// recordsFeed is GET /v1/records (tool walk_all_records): the items of
// every stream the key reads (exactly the streams GET /v1/changes lists
// without a cursor), stream after stream, so a first sync costs pages of
// records instead of a walk per stream. Each finished stream is listed
// with the cursor its own walk would have given; the last page carries a
// GET /v1/changes cursor from the feed's start, which lists everything
// written while the feed ran. Grants decide everything, as for
// GET /v1/changes: a stream the key cannot read is never looked at.
func (a *API) recordsFeed(ctx context.Context, r request) (wire.RecordFeedPage, error) {
	var none wire.RecordFeedPage
	limit, err := feedLimitParam(r)
	if err != nil {
		return none, err
	}
	groups, readable := readableStreams(r.principal)
	from, err := a.feedFrom(r, readable)
	if err != nil {
		return none, err
	}
	if from.Fresh() {
		// Taken before anything is read: whatever the feed misses was
		// written by a transaction this snapshot could not see.
		now, err := a.store.StreamsHorizon(ctx)
		if err != nil {
			return none, err
		}
		if err := a.cursors.SinceAhead(from, now); err != nil {
			return none, err
		}
		a.cursors.PinRecordFeed(&from, now)
	}
	params := store.RecordFeedParams{Groups: groups, At: from.At(), Limit: limit, MaxBytes: recordFeedMaxBytes}
	if since := from.Since(); since != nil {
		params.Since = *since
	}
	hasCursor := !from.Fresh()
	page, err := a.store.RecordFeed(ctx, params)
	if err != nil {
		return none, err
	}
	out := wire.RecordFeedPage{Data: make([]wire.RecordFeedItem, len(page.Items)), Streams: make([]wire.RecordFeedStream, len(page.Ended))}
	for i, it := range page.Items {
		out.Data[i] = wire.RecordFeedItem{RestaurantID: it.RestaurantID, Stream: it.Stream, Record: it.Record, Delivery: it.Delivery}
	}
	for i, e := range page.Ended {
		s := wire.RecordFeedStream{RestaurantID: e.RestaurantID, Stream: e.Stream, Head: wire.Sequence(e.Head)}
		if e.Stream == store.DeliveryStream {
			s.ChangesCursor, err = a.cursors.SealDeliveryChanges(e.RestaurantID, e.Head)
		} else {
			s.ChangesCursor, err = a.cursors.SealWalkChanges(e.RestaurantID, e.Stream, e.Head)
		}
		if err != nil {
			return none, err
		}
		out.Streams[i] = s
	}
	if page.Next != nil {
		cur, err := a.cursors.SealRecordFeed(from, *page.Next)
		if err != nil {
			return none, err
		}
		out.NextCursor = &cur
	} else {
		cur, err := a.cursors.SealRecordFeedChanges(from)
		if err != nil {
			return none, err
		}
		out.ChangesCursor = &cur
	}
	a.metrics.WalkPage(metrics.WalkRecords, !hasCursor, len(out.Data))
	return out, nil
}

// feedFrom is where a page of the records feed starts: its cursor, or
// on a first page, the beginning of everything or, with since (the
// changesCursor of a GET /v1/changes listing's or a feed's last page),
// of what changed since that position. A cursor carries its feed's since:
// the two are never sent together.
func (a *API) feedFrom(r request, readable string) (cursor.FeedFrom, error) {
	raw, hasCursor, err := r.params.query("cursor")
	if err != nil {
		return cursor.FeedFrom{}, err
	}
	since, hasSince, err := r.params.query("since")
	switch {
	case err != nil:
		return cursor.FeedFrom{}, err
	case hasSince && hasCursor:
		return cursor.FeedFrom{}, apperr.Param("since", "is given with cursor: a nextCursor continues the feed it was issued by, since included; pass one of them")
	case hasSince:
		return a.cursors.OpenRecordFeedSince(readable, since)
	}
	return a.cursors.OpenRecordFeed(readable, raw, hasCursor)
}
