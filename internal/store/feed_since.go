package store

import (
	"context"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// A feed of what changed (GET /v1/records?since=, RecordFeedParams.Since)
// is the records feed over the streams GET /v1/changes lists from the
// same position, each read as a changes walk from the last row the
// position could see: its records (tombstones included) and deliveries
// written since, pinned at the head listed. A catch-up then costs pages
// of what changed, not a walk per changed stream.

// ErrSinceUnsupported: this deployment does not offer the feed of what
// changed. On Citus, StreamPositionsSeen's probes (correlated subqueries
// of the distributed records and deliveries) are not planned, and their
// rows' writers are the workers' transactions, which no listing's
// position names; a client lists GET /v1/changes instead.
var ErrSinceUnsupported = apperr.Param("since", "is not offered by this deployment; list GET /v1/changes from the same "+
	"changesCursor and walk the streams that changed")

// feedQueue appends the streams a page listed to queue: from their start
// on a feed of everything, else each from the position its rows seen by
// since end at (StreamPositionsSeen, one statement for the listing), its
// head then bounding the items it may add to what was written after.
func (s *Store) feedQueue(ctx context.Context, since Snapshot, queue []feedStream, heads []StreamHead) ([]feedStream, error) {
	if since.Xmin == 0 && since.Xmax == 0 || len(heads) == 0 {
		for _, h := range heads {
			queue = append(queue, feedStream{restaurantID: h.RestaurantID, stream: h.Stream, head: h.Head, listed: true})
		}
		return queue, nil
	}
	if citus, err := s.onCitus(ctx, s.q); err != nil || citus {
		if err == nil {
			err = ErrSinceUnsupported
		}
		return nil, err
	}
	seen, err := s.streamPositionsSeen(ctx, since, heads)
	if err != nil {
		return nil, err
	}
	for i, h := range heads {
		from := min(seen[i], h.Head)
		queue = append(queue, feedStream{restaurantID: h.RestaurantID, stream: h.Stream, head: h.Head - from,
			in: &WalkPos{Pinned: h.Head, After: from}, listed: true})
	}
	return queue, nil
}

// streamPositionsSeen is, for each of heads, the last position of its
// stream that snapshot since could see (0: none).
func (s *Store) streamPositionsSeen(ctx context.Context, since Snapshot, heads []StreamHead) ([]int64, error) {
	p := db.StreamPositionsSeenParams{Xmin: since.Xmin, Xmax: since.Xmax, Xip: since.Xip,
		RestaurantIds: make([]string, len(heads)), Streams: make([]string, len(heads))}
	if p.Xip == nil {
		p.Xip = []int64{}
	}
	for i, h := range heads {
		p.RestaurantIds[i], p.Streams[i] = h.RestaurantID, h.Stream
	}
	rows, err := s.q.StreamPositionsSeen(ctx, p)
	if err != nil {
		return nil, translate(err)
	}
	byStream := make(map[StreamHead]int64, len(rows))
	for _, r := range rows {
		byStream[StreamHead{RestaurantID: r.RestaurantID, Stream: r.Stream}] = r.Seen
	}
	seen := make([]int64, len(heads))
	for i, h := range heads {
		seen[i] = byStream[StreamHead{RestaurantID: h.RestaurantID, Stream: h.Stream}]
	}
	return seen, nil
}
