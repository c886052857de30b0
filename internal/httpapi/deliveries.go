package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/model"
	"github.com/foodsafe/foodsafe/internal/schema"
	"github.com/foodsafe/foodsafe/internal/store"
)

// maxSpanMillis is the longest from..to range: 366 days (spec 4.3).
const maxSpanMillis = 366 * 24 * 60 * 60 * 1000

// deliveriesList is GET /v1/restaurants/:restaurantId/deliveries: a
// newest-first keyset walk over [from, to].
func (a *API) deliveriesList(c *gin.Context) {
	restaurant := c.Param("restaurantId")
	from, err := millisParam(c, "from")
	if err != nil {
		a.fail(c, err)
		return
	}
	to, err := millisParam(c, "to")
	if err != nil {
		a.fail(c, err)
		return
	}
	if to < from {
		a.fail(c, apperr.Param("to", "must be greater than or equal to from"))
		return
	}
	if to-from > maxSpanMillis {
		a.fail(c, apperr.Param("to", "the range from..to spans more than 366 days (%d ms); walk longer periods in windows of at most a year", int64(maxSpanMillis)))
		return
	}
	limit, err := limitParam(c)
	if err != nil {
		a.fail(c, err)
		return
	}
	bind := []string{restaurant, strconv.FormatInt(from, 10), strconv.FormatInt(to, 10), strconv.Itoa(limit)}
	var pos store.DeliveryPos
	hasCursor, err := a.cursorParam(c, cursorDeliveries, bind, &pos)
	if err != nil {
		a.fail(c, err)
		return
	}
	var after *store.DeliveryPos
	if hasCursor {
		after = &pos
	}
	page, more, err := a.store.DeliveryList(c.Request.Context(), restaurant, from, to, limit, after)
	if err != nil {
		a.fail(c, err)
		return
	}
	var next any
	if more {
		last := page[len(page)-1]
		next = store.DeliveryPos{OccurredAt: int64(last.OccurredAt), ID: last.ID}
	}
	respondPage(a, c, cursorDeliveries, bind, page, next, 0)
}

// deliveryGet is GET /v1/restaurants/:restaurantId/deliveries/:deliveryId.
func (a *API) deliveryGet(c *gin.Context) {
	id := c.Param("deliveryId")
	if !ids.Valid(id) {
		a.fail(c, apperr.ErrNotFound)
		return
	}
	d, err := a.store.DeliveryGet(c.Request.Context(), c.Param("restaurantId"), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, d)
}

// Data wraps a single resource in {"data": ...}, the shape of write
// responses.
type Data[T any] struct {
	Data T `json:"data"`
}

// respondWritten answers a write with the resource as stored, marked when
// it replays an earlier identical write.
func respondWritten[T any](c *gin.Context, v T, replayed bool) {
	if replayed {
		c.Header(HeaderReplayed, "true")
	}
	c.PureJSON(http.StatusOK, Data[T]{Data: v})
}

// respondPage answers one page of a list, sealing next (nil on the last
// page) into the cursor of the following page; ttl 0 never expires.
func respondPage[T any](a *API, c *gin.Context, kind string, bind []string, items []T, next any, ttl time.Duration) {
	out := model.Page[T]{Data: items}
	if next != nil {
		cur, err := a.cursors.Seal(kind, bind, next, ttl)
		if err != nil {
			a.fail(c, err)
			return
		}
		out.NextCursor = &cur
	}
	c.PureJSON(http.StatusOK, out)
}

// deliveryPut is the provider's write path (our addition, spec 9.2):
// PUT /v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId.
// Deliveries are immutable: identical content replays, different content
// conflicts.
func (a *API) deliveryPut(c *gin.Context) {
	restaurant, id := c.Param("restaurantId"), c.Param("deliveryId")
	if !ids.Valid(id) {
		a.fail(c, invalidID("deliveryId"))
		return
	}
	doc, errs, err := a.decodeBody(c, "delivery")
	if err != nil {
		a.fail(c, err)
		return
	}
	errs = append(errs, pathEcho(doc, "id", id, "deliveryId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	if s, ok := doc["occurredAt"].(string); ok && len(s) == 19 {
		if _, err := model.ParseMillis(s); err != nil {
			errs = append(errs, apperr.FieldError{Pointer: "/occurredAt", Detail: "exceeds the largest storable timestamp 9223372036854775807"})
		}
	}
	if len(errs) > 0 {
		a.fail(c, schema.Invalid(errs))
		return
	}
	var d model.Delivery
	if err := remarshal(doc, &d); err != nil {
		a.fail(c, err)
		return
	}
	d.RestaurantID = restaurant
	out, replayed, err := a.store.DeliveryCreate(c.Request.Context(), d)
	if err != nil {
		a.fail(c, err)
		return
	}
	respondWritten(c, out, replayed)
}

// HeaderReplayed marks an idempotent replay of an earlier write.
const HeaderReplayed = "Idempotent-Replayed"

// pathEcho checks that a body member, when present as a string, repeats
// the path parameter it must equal.
func pathEcho(doc map[string]any, member, want, param string) []apperr.FieldError {
	if v, ok := doc[member].(string); ok && v != want {
		return []apperr.FieldError{{Pointer: "/" + member, Detail: "must equal the " + param + " in the path"}}
	}
	return nil
}

// remarshal turns a validated generic document into a typed struct.
func remarshal(doc any, v any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
