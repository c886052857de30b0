package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// deliveriesList is GET /v1/restaurants/:restaurantId/deliveries (tool
// list_deliveries): a newest-first keyset walk over [from, to].
func (a *API) deliveriesList(ctx context.Context, r request) (wire.Page[wire.Delivery], error) {
	restaurant := r.params.path("restaurantId")
	from, err := millisParam(r.params, "from")
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	to, err := millisParam(r.params, "to")
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	if to < from {
		return wire.Page[wire.Delivery]{}, apperr.Param("to", "must be greater than or equal to from")
	}
	if to-from > maxSpanMillis {
		return wire.Page[wire.Delivery]{}, apperr.Param("to", "the range from..to spans more than 366 days (%d ms); walk longer periods in windows of at most a year", int64(maxSpanMillis))
	}
	limit, err := limitParam(r)
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	list := cursor.Deliveries{Restaurant: restaurant, From: from, To: to}
	raw, hasCursor, err := r.params.query("cursor")
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	after, err := a.cursors.OpenDeliveries(list, raw, hasCursor)
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	page, more, err := a.store.DeliveryList(ctx, store.DeliveryListParams{RestaurantID: restaurant, From: from, To: to, Limit: limit,
		MaxBytes: a.cfg.MaxPageBytes, After: after})
	if err != nil {
		return wire.Page[wire.Delivery]{}, err
	}
	out := wire.Page[wire.Delivery]{Data: page}
	if more {
		last := page[len(page)-1]
		next, err := a.cursors.SealDeliveries(list, store.DeliveryPos{OccurredAt: int64(last.OccurredAt), ID: last.ID})
		if err != nil {
			return wire.Page[wire.Delivery]{}, err
		}
		out.NextCursor = &next
	}
	a.metrics.WalkPage(metrics.WalkDeliveries, !hasCursor, len(page))
	return out, nil
}

// deliveryGet is GET /v1/restaurants/:restaurantId/deliveries/:deliveryId
// (tool get_delivery).
func (a *API) deliveryGet(ctx context.Context, r request) (wire.Delivery, error) {
	id := r.params.path("deliveryId")
	if !ids.Valid(id) {
		return wire.Delivery{}, apperr.ErrNotFound
	}
	return a.store.DeliveryGet(ctx, store.DeliveryKey{RestaurantID: r.params.path("restaurantId"), DeliveryID: id})
}

// deliveryPut is the provider's write path (our addition, spec 9.2):
// PUT /v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId.
// Deliveries are immutable: identical content replays, different content
// conflicts.
func (a *API) deliveryPut(c *gin.Context) error {
	restaurant, id := c.Param("restaurantId"), c.Param("deliveryId")
	if !ids.Valid(id) {
		return invalidID("deliveryId")
	}
	body, err := a.readJSON(c)
	if err != nil {
		return err
	}
	out, replayed, err := a.deliveryIngest(c.Request.Context(), restaurant, id, body)
	if err != nil {
		return err
	}
	return respondWritten(c, out, replayed)
}

// deliveryIngest validates a delivery body for the delivery id and stores
// it, for the single PUT and each delivery of a batch alike.
func (a *API) deliveryIngest(ctx context.Context, restaurant, id string, body []byte) (wire.Delivery, bool, error) {
	doc, errs, err := a.parseBody(body, "delivery")
	if err != nil {
		return wire.Delivery{}, false, err
	}
	errs = append(errs, pathEcho(doc, "id", id, "deliveryId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	occurredAt, ok, tsErrs := timestampMember(doc, "occurredAt")
	errs = append(errs, tsErrs...)
	if ok {
		errs = append(errs, a.notAhead(a.now().UnixMilli(), occurredAt, "/occurredAt")...)
	}
	if len(errs) > 0 {
		return wire.Delivery{}, false, validate.Invalid(errs)
	}
	// imageCount 2.0 is the integer 2 (the schema accepted it as one): in
	// its integer form it decodes into the typed delivery, and is served
	// as 2.
	a.schemas.Integers("delivery", doc)
	// receivedAt is the service's (readOnly in the schema): one sent back
	// with a delivery read from the API is ignored, so that sending a
	// stored delivery again is still its replay.
	delete(doc, "receivedAt")
	var d wire.Delivery
	if err := remarshal(doc, &d); err != nil {
		return wire.Delivery{}, false, err
	}
	d.RestaurantID = restaurant
	digest, err := d.ContentDigest()
	if err != nil {
		return wire.Delivery{}, false, err
	}
	return a.store.DeliveryCreate(ctx, d, digest)
}
