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
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
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
func (a *API) collectionsList(c *gin.Context) error {
	p, restaurant := principal(c), c.Param("restaurantId")
	out := []wire.CollectionDescriptor{}
	for _, col := range catalog.Collections {
		if p.Can(restaurant, col.ReadScope()) {
			out = append(out, wire.CollectionDescriptor{Collection: col.Name, ReadScope: col.ReadScope(),
				Description: col.Description, StateKind: wire.StateKind, PayloadVersion: 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collection < out[j].Collection })
	return respondList(c, out)
}

// recordsWalk is GET .../collections/:collection/records: one page of a
// snapshot walk (see store.RecordWalk).
func (a *API) recordsWalk(c *gin.Context) error {
	restaurant, collection := c.Param("restaurantId"), c.Param("collection")
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	bind := []string{restaurant, collection, strconv.Itoa(limit)}
	var pos store.WalkPos
	hasCursor, err := a.cursorParam(c, cursorRecords, bind, &pos)
	if err != nil {
		return err
	}
	var at *store.WalkPos
	if hasCursor {
		at = &pos
	}
	page, next, err := a.store.RecordWalk(c.Request.Context(), restaurant, collection, limit, at)
	if err != nil {
		return err
	}
	var nextPos any // a nil *WalkPos must stay a nil interface: no cursor
	if next != nil {
		nextPos = next
	}
	if err := respondPage(a, c, cursorRecords, bind, page, nextPos, a.cfg.CursorTTL); err != nil {
		return err
	}
	a.metrics.WalkPage(metrics.WalkRecords, !hasCursor, len(page))
	return nil
}

// recordKey is the record a request path names.
func recordKey(c *gin.Context) store.RecordKey {
	return store.RecordKey{RestaurantID: c.Param("restaurantId"), Collection: c.Param("collection"), RecordID: c.Param("recordId")}
}

// recordGet is GET .../collections/:collection/records/:recordId: the
// current state, a tombstone included (it is the only proof of deletion).
func (a *API) recordGet(c *gin.Context) error {
	k := recordKey(c)
	if !ids.Valid(k.RecordID) {
		return apperr.ErrNotFound
	}
	e, err := a.store.RecordGet(c.Request.Context(), k)
	if err != nil {
		return err
	}
	c.PureJSON(http.StatusOK, e)
	return nil
}

// recordPut is the snapshot ingest of spec 4.6:
// PUT /v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/mutations/:mutationId.
func (a *API) recordPut(c *gin.Context) error {
	k, mutationID := recordKey(c), c.Param("mutationId")
	restaurant, collection, recordID := k.RestaurantID, k.Collection, k.RecordID
	for _, p := range [][2]string{{"recordId", recordID}, {"mutationId", mutationID}} {
		if !ids.Valid(p[1]) {
			return invalidID(p[0])
		}
	}
	switch key, ok := c.Request.Header[HeaderIdempotencyKey]; {
	case !ok:
		return apperr.Param(HeaderIdempotencyKey, "header is required and must equal the mutationId")
	case len(key) != 1 || key[0] != mutationID:
		return apperr.Param(HeaderIdempotencyKey, "header must equal the mutationId in the path")
	}
	doc, errs, err := a.decodeBody(c, "ingest")
	if err != nil {
		return err
	}
	errs = append(errs, pathEcho(doc, "id", recordID, "recordId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	errs = append(errs, pathEcho(doc, "mutationId", mutationID, "mutationId")...)
	capturedAt, capturedOK, tsErrs := timestampMember(doc, "capturedAt")
	errs = append(errs, tsErrs...)
	data, hasData := doc["data"].(map[string]any)
	if hasData {
		// Validated even on a tombstone, where it is then dropped.
		errs = append(errs, a.schemas.Validate(collection+".data", data, "/data")...)
	}
	if len(errs) > 0 || !capturedOK {
		return validate.Invalid(errs)
	}
	canon, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	digest := sha256.Sum256(canon)
	col, _ := catalog.Lookup(collection)
	m := store.Mutation{
		RecordKey: k, MutationID: mutationID,
		Deleted: doc["deleted"] == true, CapturedAt: capturedAt, PayloadVersion: 1, RequestSHA256: digest[:],
		CarriesFiles: col.CarriesFiles,
	}
	if !m.Deleted {
		if m.Data, err = json.Marshal(data); err != nil {
			return err
		}
	}
	env, replayed, err := a.store.RecordIngest(c.Request.Context(), m, a.now().UnixMilli())
	if err != nil {
		return err
	}
	return respondWritten(c, env, replayed)
}
