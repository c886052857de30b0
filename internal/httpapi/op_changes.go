package httpapi

import (
	"context"
	"errors"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Polling that costs what changed: GET /v1/changes lists, key-wide, the
// streams the key reads that changed since a position (tool list_changes),
// and GET .../delivery-changes pages a restaurant's deliveries in receive
// order (tool list_delivery_changes). Their cursors (package cursor) never
// expire: they name positions the service keeps for as long as the
// streams exist.

// readableStreams is what the principal reads key-wide: its restaurants
// grouped by the streams read there (collections by read scope,
// deliveries by deliveries:read), and their fingerprint, which changes
// cursors are bound to. Both were made once, when the key was loaded
// (auth.KeyRecord.Index): a listing costs the same for a key of 20,000
// restaurants as for one of 20.
func readableStreams(p *auth.Principal) ([]store.StreamGroup, string) {
	s := p.Streams()
	return s.Groups, s.Fingerprint
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
	raw, hasCursor, err := r.params.query("cursor")
	if err != nil {
		return none, err
	}
	from, err := a.cursors.OpenStreamChanges(readable, raw, hasCursor)
	if err != nil {
		return none, err
	}
	now, err := a.store.StreamsHorizon(ctx)
	if err != nil {
		return none, err
	}
	if err := a.cursors.PinStreamChanges(&from, now); err != nil {
		return none, err
	}
	afterRestaurant, afterStream := from.After()
	heads, err := a.store.StreamsChanged(ctx, store.StreamsChangedParams{Groups: groups, Since: from.Since(),
		AfterRestaurant: afterRestaurant, AfterStream: afterStream, Limit: limit})
	if err != nil {
		return none, err
	}
	more := len(heads) > limit
	heads = heads[:min(len(heads), limit)]
	out := wire.ChangesPage[wire.StreamChange]{Data: make([]wire.StreamChange, len(heads))}
	for i, h := range heads {
		out.Data[i] = wire.StreamChange{RestaurantID: h.RestaurantID, Stream: h.Stream, Head: wire.Sequence(h.Head)}
	}
	var last *store.StreamHead
	if more {
		last = &heads[len(heads)-1]
	}
	cur, err := a.cursors.SealStreamChanges(from, last)
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
	raw, hasCursor, err := r.params.query("cursor")
	if err != nil {
		return none, err
	}
	after, err := a.cursors.OpenDeliveryChanges(restaurant, raw, hasCursor)
	if err != nil {
		return none, err
	}
	page, last, more, err := a.store.DeliveryChanges(ctx, restaurant, after, limit, a.cfg.MaxPageBytes)
	if errors.Is(err, store.ErrAheadOfDeliveries) {
		return none, a.cursors.Ahead(cursor.KindDeliveryChanges)
	}
	if err != nil {
		return none, err
	}
	cur, err := a.cursors.SealDeliveryChanges(restaurant, last)
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
