package store

import (
	"context"
	"slices"
	"strings"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// StreamHead is one stream a listing of changes reports: a collection of
// a restaurant (Stream is its name) or its deliveries (DeliveryStream),
// with the stream's position now.
type StreamHead struct {
	RestaurantID string
	Stream       string
	Head         int64
}

// StreamGroup is a set of restaurants on which a key reads the same
// streams (auth.Principal.Streams makes them once per key).
type StreamGroup = auth.StreamGroup

// Snapshot is a position of a listing of changes: the transactions a
// listing could see (every one below Xmax except those in Xip, which were
// still running; Xmin is the oldest of them, or Xmax). The zero Snapshot
// sees nothing: a listing from it reports every stream.
type Snapshot struct {
	Xmin, Xmax int64
	Xip        []int64
}

// StreamsHorizon is the position the next listing starts from, taken
// before this listing reads: every change it may not see is by a
// transaction the snapshot could not see, which the next listing reports.
func (s *Store) StreamsHorizon(ctx context.Context) (Snapshot, error) {
	r, err := s.q.StreamsHorizon(ctx)
	return Snapshot{Xmin: r.Xmin, Xmax: r.Xmax, Xip: r.Xip}, translate(err)
}

// StreamsChangedParams selects one page of StreamsChanged.
type StreamsChangedParams struct {
	Groups []StreamGroup
	Since  Snapshot
	// AfterRestaurant and AfterStream are the last stream of the previous
	// page; both empty for the first.
	AfterRestaurant, AfterStream string
	Limit                        int
}

// StreamsChanged lists the streams of p.Groups last written by a
// transaction that snapshot p.Since could not see, ordered by restaurant
// then stream (bytewise) strictly after (p.AfterRestaurant,
// p.AfterStream), at most p.Limit+1 of them, so the caller can tell
// whether another page follows. One statement per group, each one index
// probe per restaurant; their rows are merged here.
func (s *Store) StreamsChanged(ctx context.Context, p StreamsChangedParams) ([]StreamHead, error) {
	xip := p.Since.Xip
	if xip == nil {
		xip = []int64{}
	}
	var out []StreamHead
	for _, g := range p.Groups {
		rows, err := s.q.StreamsChanged(ctx, db.StreamsChangedParams{
			RestaurantIds: g.Restaurants, Xmin: p.Since.Xmin, Xmax: p.Since.Xmax, Xip: xip, Streams: g.Streams,
			AfterRestaurant: p.AfterRestaurant, AfterStream: p.AfterStream, MaxRows: int32(p.Limit + 1),
		})
		if err != nil {
			return nil, translate(err)
		}
		for _, r := range rows {
			out = append(out, StreamHead{RestaurantID: r.RestaurantID, Stream: r.Stream, Head: r.Head})
		}
	}
	slices.SortFunc(out, func(a, b StreamHead) int {
		if c := strings.Compare(a.RestaurantID, b.RestaurantID); c != 0 {
			return c
		}
		return strings.Compare(a.Stream, b.Stream)
	})
	return out[:min(len(out), p.Limit+1)], nil
}
