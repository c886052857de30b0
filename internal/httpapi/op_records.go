package httpapi

import (
	"context"
	"errors"
	"sort"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// HeaderIdempotencyKey must repeat the mutation id on ingest.
const HeaderIdempotencyKey = "Idempotency-Key"

// collectionScope needs `<collection>:<access>` for the collection
// parameter; an unknown collection is a 400, checked after the restaurant
// grant and before the scope (spec 4.4).
func collectionScope(access string) *need {
	return &need{
		check: func(ps params) ([]string, error) {
			col, ok := catalog.Lookup(ps.path("collection"))
			if !ok {
				return nil, apperr.Param("collection", "is not one of the 24 collections (see GET /v1/restaurants/{restaurantId}/collections)")
			}
			return []string{col.Name + ":" + access}, nil
		},
		names: []string{"<collection>:" + access},
	}
}

// collectionsList is GET /v1/restaurants/:restaurantId/collections (tool
// list_collections): the collections this key may read there, by name;
// empty when none.
func (a *API) collectionsList(_ context.Context, r request) (List[wire.CollectionDescriptor], error) {
	restaurant := r.params.path("restaurantId")
	out := []wire.CollectionDescriptor{}
	for _, col := range catalog.Collections {
		if r.principal.Can(restaurant, col.ReadScope()) {
			out = append(out, wire.CollectionDescriptor{Collection: col.Name, ReadScope: col.ReadScope(),
				Description: col.Description, StateKind: wire.StateKind, PayloadVersion: 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Collection < out[j].Collection })
	return List[wire.CollectionDescriptor]{Data: out}, nil
}

// recordsWalk is GET .../collections/:collection/records (tool
// walk_records): one page of a walk. Without a cursor it starts a full
// walk; a nextCursor continues its walk; a changesCursor starts a changes
// walk (what changed since the walk that issued it). The page carries
// nextCursor until the walk's last page, which carries the changesCursor of
// the next changes walk instead. A page ends early, with its nextCursor,
// once its records reach FOODSAFE_MAX_PAGE_BYTES: limit is a maximum.
func (a *API) recordsWalk(ctx context.Context, r request) (wire.WalkPage, error) {
	limit, err := limitParam(r)
	if err != nil {
		return wire.WalkPage{}, err
	}
	raw, hasCursor, err := r.params.query("cursor")
	if err != nil {
		return wire.WalkPage{}, err
	}
	w := cursor.Walk{Restaurant: r.params.path("restaurantId"), Collection: r.params.path("collection"), Limit: limit}
	from, err := a.cursors.OpenWalk(w, raw, hasCursor)
	if err != nil {
		return wire.WalkPage{}, err
	}
	var page store.WalkPage
	// Metrics count a changes walk's first page as a changes page; its
	// later pages continue with ordinary walk cursors.
	walk := metrics.WalkRecords
	if from.Changes {
		walk = metrics.WalkChanges
		page, err = a.store.RecordChanges(ctx, store.RecordChangesParams{RestaurantID: w.Restaurant, Collection: w.Collection, Limit: limit,
			MaxBytes: a.cfg.MaxPageBytes, Since: from.Since})
		if errors.Is(err, store.ErrAheadOfStream) {
			return wire.WalkPage{}, a.cursors.Ahead(cursor.KindChanges)
		}
	} else {
		page, err = a.store.RecordWalk(ctx, store.RecordWalkParams{RestaurantID: w.Restaurant, Collection: w.Collection, Limit: limit,
			MaxBytes: a.cfg.MaxPageBytes, Pos: from.After})
	}
	if err != nil {
		return wire.WalkPage{}, err
	}
	a.metrics.WalkPage(walk, !hasCursor || from.Changes, len(page.Records))
	out := wire.WalkPage{Data: page.Records}
	out.NextCursor, out.ChangesCursor, err = a.cursors.SealWalk(w, from, page.Next, page.Pinned)
	return out, err
}

// recordKey is the record a request names.
func recordKey(ps params) store.RecordKey {
	return store.RecordKey{RestaurantID: ps.path("restaurantId"), Collection: ps.path("collection"), RecordID: ps.path("recordId")}
}

// recordGet is GET .../collections/:collection/records/:recordId (tool
// get_record): the current state, a tombstone included (it is the only
// proof of deletion).
func (a *API) recordGet(ctx context.Context, r request) (wire.Envelope, error) {
	k := recordKey(r.params)
	if !ids.Valid(k.RecordID) {
		return wire.Envelope{}, apperr.ErrNotFound
	}
	return a.store.RecordGet(ctx, k)
}

// recordPut is the snapshot ingest of spec 4.6:
// PUT /v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/mutations/:mutationId.
func (a *API) recordPut(c *gin.Context) error {
	k, mutationID := recordKey(restParams{c}), c.Param("mutationId")
	for _, p := range [][2]string{{"recordId", k.RecordID}, {"mutationId", mutationID}} {
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
	body, err := a.readJSON(c)
	if err != nil {
		return err
	}
	env, how, err := a.snapshotIngest(c.Request.Context(), k, mutationID, body)
	if err != nil {
		return err
	}
	return respondIngested(c, env, how)
}

// snapshotIngest validates a snapshot body for the record k and applies
// it: every rule of spec 4.6 but those on the request line and headers.
func (a *API) snapshotIngest(ctx context.Context, k store.RecordKey, mutationID string, body []byte) (wire.Envelope, store.Ingested, error) {
	m, receivedAt, err := a.snapshotMutation(k, mutationID, body)
	if err != nil {
		return wire.Envelope{}, 0, err
	}
	return a.store.RecordIngest(ctx, m, receivedAt)
}

// snapshotMutation validates a snapshot body for the record k: every rule
// of spec 4.6 the body carries, for the single PUT and each snapshot of a
// batch alike. It returns the mutation to apply and its receive time; the
// store judges the rest (replay, conflict, backfill).
func (a *API) snapshotMutation(k store.RecordKey, mutationID string, body []byte) (store.Mutation, int64, error) {
	restaurant, collection, recordID := k.RestaurantID, k.Collection, k.RecordID
	// The body is read once: its document, and data's text as sent.
	doc, rawData, err := validate.DecodeKeeping(body, "data")
	if err != nil {
		return store.Mutation{}, 0, err
	}
	errs := a.schemas.Validate("ingest", doc, "")
	errs = append(errs, pathEcho(doc, "id", recordID, "recordId")...)
	errs = append(errs, pathEcho(doc, "restaurantId", restaurant, "restaurantId")...)
	errs = append(errs, pathEcho(doc, "mutationId", mutationID, "mutationId")...)
	capturedAt, capturedOK, tsErrs := timestampMember(doc, "capturedAt")
	errs = append(errs, tsErrs...)
	now := a.now().UnixMilli()
	if capturedOK {
		errs = append(errs, a.notAhead(now, capturedAt, "/capturedAt")...)
	}
	deleted := doc["deleted"] == true
	data, _ := doc["data"].(map[string]any)
	if deleted {
		// A tombstone may carry stale data; it is neither validated nor kept
		// (spec 4.6 requires validity only when deleted is false), and it is
		// no part of the request's identity.
		delete(doc, "data")
	} else if data != nil {
		errs = append(errs, a.schemas.Validate(collection+".data", data, "/data")...)
	}
	if len(errs) > 0 || !capturedOK {
		return store.Mutation{}, 0, validate.Invalid(errs)
	}
	// Integer fields take their integer form (1.0 becomes 1), so a typed
	// client can decode them; the rest of data stays as sent. The digest
	// compares values, which this does not change.
	var integers map[string]string
	if !deleted && data != nil {
		integers = a.schemas.Integers(collection+".data", data)
	}
	digest, err := wire.RequestDigest(doc)
	if err != nil {
		return store.Mutation{}, 0, err
	}
	col, _ := catalog.Lookup(collection)
	m := store.Mutation{
		RecordKey: k, MutationID: mutationID,
		Deleted: deleted, CapturedAt: capturedAt, PayloadVersion: 1, RequestSHA256: digest,
		CarriesFiles: col.CarriesFiles, Events: col.Events,
	}
	if !m.Deleted {
		// Stored as sent (validate.DecodeKeeping), never re-encoded from
		// the decoded form: numbers keep their text (but for integer
		// fields), members their order.
		if m.Data, err = validate.ReplaceNumbers(rawData, integers); err != nil {
			return store.Mutation{}, 0, err
		}
	}
	// receivedAt is never before capturedAt (spec 2.3): a device clock a
	// little ahead, within the tolerated skew, moves receivedAt with it.
	// The store raises it further to the stream's last receivedAt, under
	// the stream's lock, so it never decreases along the stream.
	return m, max(now, capturedAt), nil
}
