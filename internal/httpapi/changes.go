package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Polling that costs what changed: GET /v1/changes lists, key-wide, the
// streams the key reads that changed since a position (tool list_changes),
// and GET .../delivery-changes pages a restaurant's deliveries in receive
// order (tool list_delivery_changes). Their cursors never expire: they
// name positions the service keeps for as long as the streams exist.
const (
	// cursorStreamChanges: a position of a listing of changed streams,
	// continuing it (nextCursor) or starting the next (changesCursor).
	cursorStreamChanges = "stream-changes"
	// cursorDeliveryChanges: a position in a restaurant's delivery stream;
	// bound to the restaurant.
	cursorDeliveryChanges = "delivery-changes"
)

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

// readableStreams groups the principal's restaurants by the streams it
// reads there (collections by read scope, deliveries by deliveries:read),
// dropping restaurants where it reads none, and fingerprints the whole.
func readableStreams(p *auth.Principal) ([]store.StreamGroup, string) {
	grants := p.Grants()
	slices.SortFunc(grants, func(a, b auth.Grant) int { return strings.Compare(a.RestaurantID, b.RestaurantID) })
	byStreams := map[string]int{}
	var groups []store.StreamGroup
	h := sha256.New()
	for _, g := range grants {
		var streams []string
		if slices.Contains(g.Scopes, catalog.DeliveriesRead) {
			streams = append(streams, store.DeliveryStream)
		}
		for _, c := range catalog.Collections {
			if slices.Contains(g.Scopes, c.ReadScope()) {
				streams = append(streams, c.Name)
			}
		}
		if len(streams) == 0 {
			continue
		}
		slices.Sort(streams)
		key := strings.Join(streams, ",")
		h.Write([]byte(g.RestaurantID + "\x00" + key + "\x00"))
		i, ok := byStreams[key]
		if !ok {
			i = len(groups)
			byStreams[key] = i
			groups = append(groups, store.StreamGroup{Streams: streams})
		}
		groups[i].Restaurants = append(groups[i].Restaurants, g.RestaurantID)
	}
	return groups, hex.EncodeToString(h.Sum(nil)[:12])
}

// changesList is GET /v1/changes (tool list_changes): the streams the key
// reads that changed since the cursor's position (every stream that has
// data, without a cursor), each with its head, by restaurant then stream.
// Grants and scopes decide everything: a restaurant or collection the key
// cannot read is never looked at, so it is never mentioned.
func (a *API) changesList(ctx context.Context, r request) (wire.ChangesPage[wire.StreamChange], error) {
	var none wire.ChangesPage[wire.StreamChange]
	limit, err := limitParam(r)
	if err != nil {
		return none, err
	}
	groups, readable := readableStreams(r.principal)
	var pos streamChangesPos
	hasCursor, err := a.changesCursorParam(r.params, cursorStreamChanges, nil, &pos, metrics.WalkChanges)
	if err != nil {
		return none, err
	}
	if hasCursor && !validStreamPos(pos) {
		a.metrics.CursorRefused(metrics.WalkChanges, metrics.CursorMalformed)
		return none, errMalformedChangesCursor
	}
	if !hasCursor || pos.Readable != readable {
		pos = streamChangesPos{Readable: readable}
	}
	now, err := a.store.StreamsHorizon(ctx)
	if err != nil {
		return none, err
	}
	if pos.Since.Xmax > now.Xmax || (pos.Horizon != nil && pos.Horizon.Xmax > now.Xmax) {
		a.metrics.CursorRefused(metrics.WalkChanges, metrics.CursorAhead)
		return none, apperr.Param("cursor", "names a position this service has not reached (its data was restored or reset since); list again without a cursor and compare each stream's head with your copy")
	}
	if pos.Horizon == nil {
		pos.Horizon = positionOf(now)
	}
	heads, err := a.store.StreamsChanged(ctx, groups, pos.Since.snapshot(), pos.AfterRestaurant, pos.AfterStream, limit)
	if err != nil {
		return none, err
	}
	more := len(heads) > limit
	heads = heads[:min(len(heads), limit)]
	out := wire.ChangesPage[wire.StreamChange]{Data: make([]wire.StreamChange, len(heads))}
	for i, h := range heads {
		out.Data[i] = wire.StreamChange{RestaurantID: h.RestaurantID, Stream: h.Stream, Head: wire.Sequence(h.Head)}
	}
	seal := streamChangesPos{Since: *pos.Horizon, Readable: readable}
	if more {
		last := heads[len(heads)-1]
		seal = pos
		seal.AfterRestaurant, seal.AfterStream = last.RestaurantID, last.Stream
	}
	cur, err := a.cursors.Seal(cursorStreamChanges, nil, seal, 0)
	if err != nil {
		return none, err
	}
	if more {
		out.NextCursor = &cur
	} else {
		out.ChangesCursor = &cur
	}
	a.metrics.WalkPage(metrics.WalkChanges, !hasCursor, len(out.Data))
	return out, nil
}

// validStreamPos checks a decoded position: the signature proves the
// service issued it, this that it is one the service could have issued.
func validStreamPos(p streamChangesPos) bool {
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

// deliveryChangesPos is what a delivery changes cursor carries: the
// position of the last delivery returned.
type deliveryChangesPos struct {
	After int64 `json:"a"`
}

// deliveryChanges is GET /v1/restaurants/:restaurantId/delivery-changes
// (tool list_delivery_changes): the restaurant's deliveries in the order
// the service received them, after the cursor's position (from the first
// one without a cursor). A delivery that occurred days ago and was
// uploaded late comes after everything received before it, so a client
// following the cursor never misses it, which the occurredAt window of
// the delivery list cannot promise.
func (a *API) deliveryChanges(ctx context.Context, r request) (wire.ChangesPage[wire.Delivery], error) {
	var none wire.ChangesPage[wire.Delivery]
	restaurant := r.params.path("restaurantId")
	limit, err := limitParam(r)
	if err != nil {
		return none, err
	}
	bind := []string{restaurant}
	var pos deliveryChangesPos
	hasCursor, err := a.changesCursorParam(r.params, cursorDeliveryChanges, bind, &pos, metrics.WalkDeliveries)
	if err != nil {
		return none, err
	}
	if pos.After < 0 {
		a.metrics.CursorRefused(metrics.WalkDeliveries, metrics.CursorMalformed)
		return none, errMalformedChangesCursor
	}
	page, last, more, err := a.store.DeliveryChanges(ctx, restaurant, pos.After, limit)
	if errors.Is(err, store.ErrAheadOfDeliveries) {
		a.metrics.CursorRefused(metrics.WalkDeliveries, metrics.CursorAhead)
		// Said without the stream's position: a refusal tells nothing
		// about data the client could not read.
		return none, apperr.Param("cursor", "names a position this restaurant's deliveries have not reached (its data was restored or reset since); start again without a cursor and deduplicate on id")
	}
	if err != nil {
		return none, err
	}
	cur, err := a.cursors.Seal(cursorDeliveryChanges, bind, deliveryChangesPos{After: last}, 0)
	if err != nil {
		return none, err
	}
	out := wire.ChangesPage[wire.Delivery]{Data: page}
	if more {
		out.NextCursor = &cur
	} else {
		out.ChangesCursor = &cur
	}
	a.metrics.WalkPage(metrics.WalkDeliveries, !hasCursor, len(page))
	return out, nil
}

// errMalformedChangesCursor refuses a cursor this service did not issue.
var errMalformedChangesCursor = apperr.Param("cursor", "is not a cursor issued by this service for this list (garbage, truncated or altered); pass nextCursor or changesCursor unchanged, or start again without a cursor")

// changesCursorParam reads the `cursor` of a changes listing into pos,
// refusing one that cannot be used with a 400 that says what to do. These
// cursors never expire, so the only refusals are a cursor of another kind
// or binding, and one the service did not issue.
func (a *API) changesCursorParam(ps params, kind string, bind []string, pos any, walk metrics.Walk) (bool, error) {
	v, ok, err := ps.query("cursor")
	if err != nil || !ok {
		return false, err
	}
	switch err := a.cursors.Open(v, kind, bind, pos); {
	case err == nil:
		return true, nil
	case errors.Is(err, cursor.ErrMismatch) && kind == cursorDeliveryChanges:
		a.metrics.CursorRefused(walk, metrics.CursorMismatch)
		return true, apperr.Param("cursor", "was issued for another restaurant's deliveries (or by another list); keep one cursor per restaurant, or start again without a cursor")
	default:
		a.metrics.CursorRefused(walk, metrics.CursorMalformed)
		return true, errMalformedChangesCursor
	}
}
