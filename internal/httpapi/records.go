package httpapi

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/model"
	"github.com/foodsafe/foodsafe/internal/schema"
	"github.com/foodsafe/foodsafe/internal/store"
)

// HeaderIdempotencyKey must repeat the mutation id on ingest.
const HeaderIdempotencyKey = "Idempotency-Key"

// collectionScope needs `<collection>:<access>` for the :collection path
// parameter; an unknown collection is a 400, checked after the restaurant
// grant and before the scope (spec 4.4).
func collectionScope(access string) *need {
	return &need{
		check: func(c *gin.Context) ([]string, error) {
			col, ok := catalog.Lookup(c.Param("collection"))
			if !ok {
				return nil, apperr.Param("collection", "is not one of the 24 collections (see GET /v1/restaurants/{restaurantId}/collections)")
			}
			return []string{col.Name + ":" + access}, nil
		},
		names: []string{"<collection>:" + access},
	}
}

// collectionsList is GET /v1/restaurants/:restaurantId/collections: the
// collections this key may read there, by name; empty when none.
func (a *API) collectionsList(c *gin.Context) {
	p, restaurant := principal(c), c.Param("restaurantId")
	out := []model.CollectionDescriptor{}
	for _, col := range catalog.Collections {
		if p.Can(restaurant, col.ReadScope()) {
			out = append(out, model.CollectionDescriptor{Collection: col.Name, ReadScope: col.ReadScope(),
				Description: col.Description, StateKind: model.StateKind, PayloadVersion: 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collection < out[j].Collection })
	c.PureJSON(http.StatusOK, List[model.CollectionDescriptor]{Data: out})
}

// recordsWalk is GET .../collections/:collection/records: one page of a
// snapshot walk (see store.RecordWalk).
func (a *API) recordsWalk(c *gin.Context) {
	restaurant, collection := c.Param("restaurantId"), c.Param("collection")
	limit, err := limitParam(c)
	if err != nil {
		a.fail(c, err)
		return
	}
	bind := []string{restaurant, collection, strconv.Itoa(limit)}
	var pos store.WalkPos
	hasCursor, err := a.cursorParam(c, cursorRecords, bind, &pos)
	if err != nil {
		a.fail(c, err)
		return
	}
	var at *store.WalkPos
	if hasCursor {
		at = &pos
	}
	page, next, err := a.store.RecordWalk(c.Request.Context(), restaurant, collection, limit, at)
	if err != nil {
		a.fail(c, err)
		return
	}
	var nextPos any // a nil *WalkPos must stay a nil interface: no cursor
	if next != nil {
		nextPos = next
	}
	respondPage(a, c, cursorRecords, bind, page, nextPos, a.cfg.CursorTTL)
}

// recordGet is GET .../collections/:collection/records/:recordId: the
// current state, a tombstone included (it is the only proof of deletion).
func (a *API) recordGet(c *gin.Context) {
	id := c.Param("recordId")
	if !ids.Valid(id) {
		a.fail(c, apperr.ErrNotFound)
		return
	}
	e, err := a.store.RecordGet(c.Request.Context(), c.Param("restaurantId"), c.Param("collection"), id)
	if err != nil {
		a.fail(c, err)
		return
	}
	c.PureJSON(http.StatusOK, e)
}

// recordPut is the snapshot ingest of spec 4.6:
// PUT /v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/mutations/:mutationId.
func (a *API) recordPut(c *gin.Context) {
	restaurant, collection := c.Param("restaurantId"), c.Param("collection")
	recordID, mutationID := c.Param("recordId"), c.Param("mutationId")
	for _, p := range [][2]string{{"recordId", recordID}, {"mutationId", mutationID}} {
		if !ids.Valid(p[1]) {
			a.fail(c, invalidID(p[0]))
			return
		}
	}
	switch key, ok := c.Request.Header[HeaderIdempotencyKey]; {
	case !ok:
		a.fail(c, apperr.Param(HeaderIdempotencyKey, "header is required and must equal the mutationId"))
		return
	case len(key) != 1 || key[0] != mutationID:
		a.fail(c, apperr.Param(HeaderIdempotencyKey, "header must equal the mutationId in the path"))
		return
	}
	doc, errs, err := a.decodeBody(c, "ingest")
	if err != nil {
		a.fail(c, err)
		return
	}
	errs = append(errs, pathEcho(doc, "id", recordID, "recordId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	errs = append(errs, pathEcho(doc, "mutationId", mutationID, "mutationId")...)
	capturedAt, capturedOK := int64(0), false
	if s, ok := doc["capturedAt"].(string); ok {
		if ms, err := model.ParseMillis(s); err == nil {
			capturedAt, capturedOK = int64(ms), true
		} else if len(s) == 19 {
			errs = append(errs, apperr.FieldError{Pointer: "/capturedAt", Detail: "exceeds the largest storable timestamp 9223372036854775807"})
		}
	}
	data, hasData := doc["data"].(map[string]any)
	if hasData {
		// Validated even on a tombstone, where it is then dropped.
		errs = append(errs, a.schemas.Validate(collection+".data", data, "/data")...)
	}
	if len(errs) > 0 || !capturedOK {
		a.fail(c, schema.Invalid(errs))
		return
	}
	canon, err := json.Marshal(doc)
	if err != nil {
		a.fail(c, err)
		return
	}
	digest := sha256.Sum256(canon)
	col, _ := catalog.Lookup(collection)
	m := store.Mutation{
		RestaurantID: restaurant, Collection: collection, RecordID: recordID, MutationID: mutationID,
		Deleted: doc["deleted"] == true, CapturedAt: capturedAt, PayloadVersion: 1, RequestSHA256: digest[:],
		CarriesFiles: col.CarriesFiles,
	}
	if !m.Deleted {
		if m.Data, err = json.Marshal(data); err != nil {
			a.fail(c, err)
			return
		}
	}
	env, replayed, err := a.store.RecordIngest(c.Request.Context(), m, a.now().UnixMilli())
	if err != nil {
		a.fail(c, err)
		return
	}
	respondWritten(c, env, replayed)
}
