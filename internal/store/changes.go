package store

import (
	"context"
	"slices"
	"strings"

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
// streams. Most keys read the same streams everywhere: one group.
type StreamGroup struct {
	Restaurants []string
	Streams     []string
}

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

// StreamsChanged lists the streams of the groups last written by a
// transaction that snapshot since could not see, ordered by restaurant
// then stream (bytewise) strictly after (afterRestaurant, afterStream),
// at most limit+1 of them, so the caller can tell whether another page
// follows. One statement per group, each one index probe per restaurant;
// their rows are merged here.
func (s *Store) StreamsChanged(ctx context.Context, groups []StreamGroup, since Snapshot, afterRestaurant, afterStream string, limit int) ([]StreamHead, error) {
	xip := since.Xip
	if xip == nil {
		xip = []int64{}
	}
	var out []StreamHead
	for _, g := range groups {
		rows, err := s.q.StreamsChanged(ctx, db.StreamsChangedParams{
			RestaurantIds: g.Restaurants, Xmin: since.Xmin, Xmax: since.Xmax, Xip: xip, Streams: g.Streams,
			AfterRestaurant: afterRestaurant, AfterStream: afterStream, MaxRows: int32(limit + 1),
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
	return out[:min(len(out), limit+1)], nil
}
