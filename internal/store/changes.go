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

// StreamsHorizon is where a listing of changes starts and the position the
// next one resumes from: horizon (the oldest transaction running now)
// lags every change the listing may not see, so a listing from it misses
// none; next is the next transaction id, beyond which no position was ever
// issued by this database.
func (s *Store) StreamsHorizon(ctx context.Context) (horizon, next int64, err error) {
	r, err := s.q.StreamsHorizon(ctx)
	return r.Horizon, r.Next, translate(err)
}

// StreamsChanged lists the streams of the groups last written at or after
// position since, ordered by restaurant then stream (bytewise) strictly
// after (afterRestaurant, afterStream), at most limit+1 of them, so the
// caller can tell whether another page follows. One statement per group,
// each one index probe per restaurant; their rows are merged here.
func (s *Store) StreamsChanged(ctx context.Context, groups []StreamGroup, since int64, afterRestaurant, afterStream string, limit int) ([]StreamHead, error) {
	var out []StreamHead
	for _, g := range groups {
		rows, err := s.q.StreamsChanged(ctx, db.StreamsChangedParams{
			RestaurantIds: g.Restaurants, Since: since, Streams: g.Streams,
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
