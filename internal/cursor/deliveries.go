package cursor

import (
	"strconv"

	"github.com/foodsafe/foodsafe/internal/ids"

	"github.com/foodsafe/foodsafe/internal/store"
)

// Deliveries names a delivery list: a restaurant's deliveries whose
// occurredAt is in [From, To]. Its cursors are bound to it (spec 4.3) and
// not to the page size: a keyset position does not depend on it, so a walk
// may change limit between pages. They never expire: deliveries are
// immutable.
type Deliveries struct {
	Restaurant string
	From, To   int64
}

func (d Deliveries) bind() []string {
	return []string{d.Restaurant, strconv.FormatInt(d.From, 10), strconv.FormatInt(d.To, 10)}
}

// OpenDeliveries reads the cursor of a page of d: the position to continue
// after, nil on a first page.
func (i *Issuer) OpenDeliveries(d Deliveries, raw string, given bool) (*store.DeliveryPos, error) {
	var pos deliveryPos
	if ok, err := i.open(KindDeliveries, raw, given, d.bind(), &pos); !ok || err != nil {
		return nil, err
	}
	return &store.DeliveryPos{OccurredAt: pos.OccurredAt, ID: pos.ID}, nil
}

// SealDeliveries makes the nextCursor of d that continues after next.
func (i *Issuer) SealDeliveries(d Deliveries, next store.DeliveryPos) (string, error) {
	return i.codec.Seal(string(KindDeliveries), d.bind(), deliveryPos{OccurredAt: next.OccurredAt, ID: next.ID}, 0)
}

// deliveryPos is what a delivery list's nextCursor carries: the keyset
// position (occurredAt, id) of the last delivery returned, newest first.
type deliveryPos struct {
	OccurredAt int64  `json:"o"`
	ID         string `json:"i"`
}

// Valid reports a position the delivery list could have issued: a
// timestamp that is not negative and a well-formed delivery id (a NUL
// character would reach PostgreSQL as an error).
func (p *deliveryPos) Valid() bool {
	return p.OccurredAt >= 0 && ids.Valid(p.ID)
}

// deliveryChangesPos is what a delivery changes cursor carries: the
// position in the restaurant's receive order of the last delivery
// returned.
type deliveryChangesPos struct {
	After int64 `json:"a"`
}

// Valid reports a position the service could have issued.
func (p *deliveryChangesPos) Valid() bool { return p.After >= 0 }

// The cursors of a restaurant's deliveries in receive order (nextCursor
// and changesCursor alike) are bound to the restaurant, accept any page
// size and never expire: they name positions the service keeps for as
// long as the stream exists.

// OpenDeliveryChanges reads the cursor of a page of restaurant's
// deliveries in receive order: the position to continue after (0, before
// the first, without a cursor).
func (i *Issuer) OpenDeliveryChanges(restaurant, raw string, given bool) (int64, error) {
	var pos deliveryChangesPos
	_, err := i.open(KindDeliveryChanges, raw, given, []string{restaurant}, &pos)
	return pos.After, err
}

// SealDeliveryChanges makes the cursor continuing restaurant's deliveries
// after position last.
func (i *Issuer) SealDeliveryChanges(restaurant string, last int64) (string, error) {
	return i.codec.Seal(string(KindDeliveryChanges), []string{restaurant}, deliveryChangesPos{After: last}, 0)
}
