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
	// Groups are the streams to list, each group's restaurants sorted
	// bytewise (as auth.Principal.Streams makes them).
	Groups []StreamGroup
	Since  Snapshot
	// AfterRestaurant and AfterStream are the last stream of the previous
	// page; both empty for the first.
	AfterRestaurant, AfterStream string
	Limit                        int
}

const (
	// scanAbove is the number of restaurants beyond which a listing from a
	// position first reads what changed service-wide since it
	// (StreamsChangedSince), at most as many streams as the key has
	// restaurants, instead of one probe per restaurant: a poll with
	// nothing changed then costs about the same for 20,000 restaurants as
	// for 20. Below it the probes are cheaper than any scan.
	scanAbove = 500
	// scanGroups bounds the groups a scan's rows are matched against.
	scanGroups = 8
	// probeWindow and probeWindowMax size the windows of restaurants
	// probed per statement: a page of a full listing is found among the
	// first few restaurants after its position, so its statement names
	// probeWindow of them, not all 20,000; each further window (when
	// fewer streams changed) is twice as large, up to probeWindowMax
	// (planning a custom plan costs about a millisecond per 700 ids).
	probeWindow    = 256
	probeWindowMax = 2048
)

// StreamsChanged lists the streams of p.Groups last written by a
// transaction that snapshot p.Since could not see, ordered by restaurant
// then stream (bytewise) strictly after (p.AfterRestaurant,
// p.AfterStream), at most p.Limit+1 of them, so the caller can tell
// whether another page follows. A page costs what it holds, not what the
// key holds: for a key of many restaurants, listing from a position reads
// the streams changed since service-wide when they are fewer than its
// restaurants (streamsChangedScan); otherwise it probes its restaurants
// from the page's position on, a window at a time (streamsChangedProbe).
func (s *Store) StreamsChanged(ctx context.Context, p StreamsChangedParams) ([]StreamHead, error) {
	if p.Since.Xip == nil {
		p.Since.Xip = []int64{}
	}
	restaurants := 0
	for _, g := range p.Groups {
		restaurants += len(g.Restaurants)
	}
	// From no position (xmin 0) everything changed: no scan can be short.
	if p.Since.Xmin > 0 && restaurants > scanAbove && len(p.Groups) <= scanGroups {
		heads, ok, err := s.streamsChangedScan(ctx, p, restaurants)
		if err != nil || ok {
			return heads, err
		}
	}
	return s.streamsChangedProbe(ctx, p)
}

// streamsChangedScan is StreamsChanged from the streams changed
// service-wide (StreamsChangedSince, at most budget of them); ok is false
// when there were more, and nothing was listed.
func (s *Store) streamsChangedScan(ctx context.Context, p StreamsChangedParams, budget int) ([]StreamHead, bool, error) {
	rows, err := s.q.StreamsChangedSince(ctx, db.StreamsChangedSinceParams{
		Xmin: p.Since.Xmin, Xmax: p.Since.Xmax, Xip: p.Since.Xip, MaxRows: int32(budget + 1),
	})
	if err != nil {
		return nil, false, translate(err)
	}
	if len(rows) > budget {
		return nil, false, nil
	}
	var out []StreamHead
	for _, r := range rows {
		h := StreamHead{RestaurantID: r.RestaurantID, Stream: r.Stream, Head: r.Head}
		if compareHeads(h, StreamHead{RestaurantID: p.AfterRestaurant, Stream: p.AfterStream}) > 0 && reads(p.Groups, h) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, compareHeads)
	return out[:min(len(out), p.Limit+1)], true, nil
}

// reads reports whether some group holds h's restaurant and stream.
func reads(groups []StreamGroup, h StreamHead) bool {
	for _, g := range groups {
		if _, ok := slices.BinarySearch(g.Restaurants, h.RestaurantID); ok {
			_, ok := slices.BinarySearch(g.Streams, h.Stream)
			return ok
		}
	}
	return false
}

// streamsChangedProbe is StreamsChanged by probing the restaurants at or
// after the page's position (StreamsChanged: one index probe each, per
// group of restaurants reading the same streams), in windows of
// restaurants taken in order until the page is full or none is left.
func (s *Store) streamsChangedProbe(ctx context.Context, p StreamsChangedParams) ([]StreamHead, error) {
	want := p.Limit + 1
	// next[i] is the first restaurant of group i not probed yet.
	next := make([]int, len(p.Groups))
	for i, g := range p.Groups {
		next[i], _ = slices.BinarySearch(g.Restaurants, p.AfterRestaurant)
	}
	var out []StreamHead
	for window := probeWindow; len(out) < want; window = min(2*window, probeWindowMax) {
		last, ok := windowLast(p.Groups, next, window)
		if !ok {
			break
		}
		var page []StreamHead
		for i, g := range p.Groups {
			end, found := slices.BinarySearch(g.Restaurants[next[i]:], last)
			end += next[i]
			if found {
				end++
			}
			ids := g.Restaurants[next[i]:end]
			next[i] = end
			if len(ids) == 0 {
				continue
			}
			rows, err := s.q.StreamsChanged(ctx, db.StreamsChangedParams{
				RestaurantIds: ids, Xmin: p.Since.Xmin, Xmax: p.Since.Xmax, Xip: p.Since.Xip, Streams: g.Streams,
				AfterRestaurant: p.AfterRestaurant, AfterStream: p.AfterStream, MaxRows: int32(want - len(out)),
			})
			if err != nil {
				return nil, translate(err)
			}
			for _, r := range rows {
				page = append(page, StreamHead{RestaurantID: r.RestaurantID, Stream: r.Stream, Head: r.Head})
			}
		}
		// Every row of this window comes after every row of the last one.
		slices.SortFunc(page, compareHeads)
		out = append(out, page[:min(len(page), want-len(out))]...)
	}
	return out, nil
}

// windowLast is the last restaurant of the next window: the n-th in
// bytewise order among those the groups have left from next on, or the
// last of them when fewer are left; ok is false when none is.
func windowLast(groups []StreamGroup, next []int, n int) (string, bool) {
	if len(groups) == 1 {
		rs := groups[0].Restaurants[next[0]:]
		if len(rs) == 0 {
			return "", false
		}
		return rs[min(n, len(rs))-1], true
	}
	// Each group's next n hold the n first of all groups.
	var first []string
	for i, g := range groups {
		first = append(first, g.Restaurants[next[i]:min(next[i]+n, len(g.Restaurants))]...)
	}
	if len(first) == 0 {
		return "", false
	}
	slices.Sort(first)
	return first[min(n, len(first))-1], true
}

// compareHeads orders by restaurant then stream, bytewise, as the
// listing's pages and positions do.
func compareHeads(a, b StreamHead) int {
	if c := strings.Compare(a.RestaurantID, b.RestaurantID); c != 0 {
		return c
	}
	return strings.Compare(a.Stream, b.Stream)
}
