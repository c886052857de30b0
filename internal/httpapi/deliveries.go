package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// maxSpanMillis is the longest from..to range: 366 days (spec 4.3).
const maxSpanMillis = 366 * 24 * 60 * 60 * 1000

// deliveriesList is GET /v1/restaurants/:restaurantId/deliveries: a
// newest-first keyset walk over [from, to].
func (a *API) deliveriesList(c *gin.Context) error {
	restaurant := c.Param("restaurantId")
	from, err := millisParam(c, "from")
	if err != nil {
		return err
	}
	to, err := millisParam(c, "to")
	if err != nil {
		return err
	}
	if to < from {
		return apperr.Param("to", "must be greater than or equal to from")
	}
	if to-from > maxSpanMillis {
		return apperr.Param("to", "the range from..to spans more than 366 days (%d ms); walk longer periods in windows of at most a year", int64(maxSpanMillis))
	}
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	bind := []string{restaurant, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10), strconv.Itoa(limit)}
	var pos store.DeliveryPos
	hasCursor, err := a.cursorParam(c, cursorDeliveries, bind, &pos)
	if err != nil {
		return err
	}
	var after *store.DeliveryPos
	if hasCursor {
		after = &pos
	}
	page, more, err := a.store.DeliveryList(c.Request.Context(), restaurant, from, to, limit, after)
	if err != nil {
		return err
	}
	var next any
	if more {
		last := page[len(page)-1]
		next = store.DeliveryPos{OccurredAt: int64(last.OccurredAt), ID: last.ID}
	}
	if err := respondPage(a, c, cursorDeliveries, bind, page, next, 0); err != nil {
		return err
	}
	a.metrics.WalkPage(metrics.WalkDeliveries, !hasCursor, len(page))
	return nil
}

// deliveryGet is GET /v1/restaurants/:restaurantId/deliveries/:deliveryId.
func (a *API) deliveryGet(c *gin.Context) error {
	id := c.Param("deliveryId")
	if !ids.Valid(id) {
		return apperr.ErrNotFound
	}
	d, err := a.store.DeliveryGet(c.Request.Context(), c.Param("restaurantId"), id)
	if err != nil {
		return err
	}
	c.PureJSON(http.StatusOK, d)
	return nil
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
	doc, errs, err := a.decodeBody(c, "delivery")
	if err != nil {
		return err
	}
	errs = append(errs, pathEcho(doc, "id", id, "deliveryId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	_, _, tsErrs := timestampMember(doc, "occurredAt")
	if errs = append(errs, tsErrs...); len(errs) > 0 {
		return validate.Invalid(errs)
	}
	var d wire.Delivery
	if err := remarshal(doc, &d); err != nil {
		return err
	}
	d.RestaurantID = restaurant
	out, replayed, err := a.store.DeliveryCreate(c.Request.Context(), d)
	if err != nil {
		return err
	}
	return respondWritten(c, out, replayed)
}
