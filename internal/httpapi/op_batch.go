package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
)

const (
	// MaxBatchItems is the most items of one batch ingest: a shift's
	// queue, in one request.
	MaxBatchItems = 500
	// BatchItemsPerRequest is how many items of a batch cost one request
	// of the key's budget, every started group counting whole: a batch of
	// 500 costs 10, a batch of 1 costs 1.
	BatchItemsPerRequest = 50
	// batchDeliveries is the collection name of a batch item that is a
	// delivery.
	batchDeliveries = catalog.DeliveryStream
)

// The needs of a batch's items: their single PUTs'.
var (
	snapshotWrite = collectionScope("write")
	deliveryWrite = scopes(catalog.DeliveriesWrite)
)

// batchItem is one item of a batch as sent: the body its single PUT would
// carry (a snapshot or a delivery), and where it stands.
type batchItem struct {
	collection string
	body       []byte
	delivery   bool
}

// BatchResult is one item's answer in a batch: what its single PUT would
// have answered, as data (with replayed for the Idempotent-Replayed
// header) or as problem.
type BatchResult struct {
	Index         int    `json:"index"`
	Status        int    `json:"status"`
	Replayed      *bool  `json:"replayed,omitempty"`
	ReplayedState string `json:"replayedState,omitempty"`
	// Data is the single PUT's data: an envelope, or a delivery.
	Data    any      `json:"data,omitempty"`
	Problem *Problem `json:"problem,omitempty"`
}

// batchCost is what a batch of n items costs of a budget of limit
// requests a minute: one request per started BatchItemsPerRequest items,
// never more than the whole budget (so a full budget always admits it).
func batchCost(n int, limit int64) int64 {
	return min(int64((n+BatchItemsPerRequest-1)/BatchItemsPerRequest), max(limit, 1))
}

// ingestBatch is POST /v1/ingest/restaurants/:restaurantId/batch: many
// snapshots and deliveries in one request, each applied in order as its
// single PUT would apply it, with its own answer. Not atomic: an item
// refused never stops the next. The whole batch is refused (before any
// item is applied) only when it is malformed or its cost is over the
// budget left.
func (a *API) ingestBatch(c *gin.Context) error {
	if err := jsonContentType(c); err != nil {
		return err
	}
	body, err := readBodyUpTo(c, a.cfg.MaxBatchBytes)
	if err != nil {
		return err
	}
	items, err := parseBatch(body)
	if err != nil {
		return err
	}
	if !a.admitBatch(c, len(items)) {
		return nil
	}
	p, restaurant := principal(c), c.Param("restaurantId")
	out := make([]BatchResult, len(items))
	for i, it := range items {
		if err := c.Request.Context().Err(); err != nil {
			return err
		}
		r, err := a.batchApply(c, p, restaurant, it)
		o, reason := writeOutcome(err, r.Replayed != nil && *r.Replayed, false)
		w, col := metrics.WriteMutation, it.collection
		if it.delivery {
			w, col = metrics.WriteDelivery, ""
		}
		a.metrics.IngestWrite(w, col, o, reason)
		if err != nil {
			pr := a.problemFor(c, err)
			if pr.Status >= http.StatusInternalServerError {
				// The store failed: what follows would fail alike. The
				// batch's answer is the failure; resending it is safe.
				return err
			}
			pr.Errors = itemPointers(pr.Errors, i, it)
			r = BatchResult{Status: pr.Status, Problem: &pr}
		}
		r.Index = i
		out[i] = r
	}
	c.PureJSON(http.StatusOK, List[BatchResult]{Data: out})
	return nil
}

// batchApply applies one item through its single PUT's own path, after
// its single PUT's access rule and size limit.
func (a *API) batchApply(c *gin.Context, p *auth.Principal, restaurant string, it batchItem) (BatchResult, error) {
	ctx := c.Request.Context()
	n := snapshotWrite
	if it.delivery {
		n = deliveryWrite
	}
	if err := allow(p, batchParams{restaurant: restaurant, collection: it.collection}, n); err != nil {
		return BatchResult{}, err
	}
	if int64(len(it.body)) > a.cfg.MaxBodyBytes {
		return BatchResult{}, apperr.New(apperr.PayloadTooLarge, "The item exceeds the limit of %d bytes of a single body.", a.cfg.MaxBodyBytes)
	}
	if it.delivery {
		id := memberString(it.body, "id")
		d, replayed, err := a.deliveryIngest(ctx, restaurant, id, it.body)
		return BatchResult{Status: http.StatusOK, Replayed: &replayed, Data: d}, err
	}
	k := store.RecordKey{RestaurantID: restaurant, Collection: it.collection, RecordID: memberString(it.body, "id")}
	env, how, err := a.snapshotIngest(ctx, k, memberString(it.body, "mutationId"), it.body)
	if err != nil {
		return BatchResult{}, err
	}
	replayed := how != store.Applied
	r := BatchResult{Status: http.StatusOK, Replayed: &replayed, Data: env}
	if how == store.ReplayedCompacted {
		r.ReplayedState = "compacted"
	}
	return r, nil
}

// memberString is the string member name of a JSON object, "" when it is
// absent, not a string, or the text no object: the identity an item's
// single PUT would carry in its path. Its validation reports the rest.
func memberString(body []byte, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[name], &s) != nil {
		return ""
	}
	return s
}

// itemPointers makes an item's violations point into the batch: /data/x
// of the third item's snapshot is /items/2/snapshot/data/x.
func itemPointers(errs []apperr.FieldError, i int, it batchItem) []apperr.FieldError {
	member := "snapshot"
	if it.delivery {
		member = "delivery"
	}
	prefix := "/items/" + strconv.Itoa(i) + "/" + member
	for j := range errs {
		if errs[j].Parameter == "" {
			errs[j].Pointer = prefix + errs[j].Pointer
		}
	}
	return errs
}

// admitBatch counts a batch of n items against the key's budget beyond
// the one request authentication counted, whole or not at all, and
// answers 429 when it does not fit. It reports whether to go on.
func (a *API) admitBatch(c *gin.Context, n int) bool {
	p := principal(c)
	cost := batchCost(n, int64(a.cfg.RateLimit))
	if cost <= 1 {
		return true
	}
	bucket := string(metrics.BucketKey) + ":" + p.KeyPublicID
	res := a.limiter.TakeMore(c.Request.Context(), bucket, cost-1)
	if res.Reached {
		a.refuseBatch(c, res, n, cost)
		return false
	}
	setRateHeaders(c, res, a.now())
	return true
}

// batchParams are a batch item's parameters, as its single PUT's path
// would carry them.
type batchParams struct{ restaurant, collection string }

func (b batchParams) path(name string) string {
	switch name {
	case "restaurantId":
		return b.restaurant
	case "collection":
		return b.collection
	}
	return ""
}

func (b batchParams) query(string) (string, bool, error) { return "", false, nil }

// parseBatch reads a batch body, {"items": [...]}: 1 to MaxBatchItems
// items, each {"collection": name, "snapshot": {...}} or
// {"collection": "deliveries", "delivery": {...}}. It refuses the batch
// whole for anything but an item's own body, which its single PUT judges.
func parseBatch(body []byte) ([]batchItem, error) {
	d := jsontext.NewDecoder(bytes.NewReader(body))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, batchSyntax(err, "The body must be a JSON object: {\"items\": [...]}.")
	}
	var items []batchItem
	seen := false
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return nil, batchSyntax(err, "")
		}
		if name.String() != "items" {
			return nil, batchInvalid("/"+pointerToken(name.String()), "is not a member of a batch: it has items only")
		}
		seen = true
		if items, err = readBatchItems(d); err != nil {
			return nil, err
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, batchSyntax(err, "")
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, batchSyntax(err, "The body must be one JSON object.")
	}
	switch {
	case !seen:
		return nil, batchInvalid("/items", "is required: 1 to "+strconv.Itoa(MaxBatchItems)+" items")
	case len(items) == 0:
		return nil, batchInvalid("/items", "holds no item: send 1 to "+strconv.Itoa(MaxBatchItems))
	}
	return items, nil
}

// readBatchItems reads the items array.
func readBatchItems(d *jsontext.Decoder) ([]batchItem, error) {
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, batchSyntax(err, "items must be an array of items.")
	}
	var items []batchItem
	for d.PeekKind() != ']' {
		if len(items) == MaxBatchItems {
			return nil, batchInvalid("/items", fmt.Sprintf("holds more than %d items: send the rest in another batch", MaxBatchItems))
		}
		it, err := readBatchItem(d, len(items))
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, batchSyntax(err, "")
	}
	return items, nil
}

// readBatchItem reads one item: its collection, and its body as sent.
func readBatchItem(d *jsontext.Decoder, i int) (batchItem, error) {
	at := "/items/" + strconv.Itoa(i)
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return batchItem{}, batchSyntax(err, "Item "+strconv.Itoa(i)+" must be an object: {\"collection\": ..., \"snapshot\": {...}}.")
	}
	var it batchItem
	var hasCollection, hasSnapshot, hasDelivery bool
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return batchItem{}, batchSyntax(err, "")
		}
		name := tok.String() // read before the next call voids the token
		v, err := d.ReadValue()
		if err != nil {
			return batchItem{}, batchSyntax(err, "")
		}
		switch name {
		case "collection":
			if v.Kind() != '"' {
				return batchItem{}, batchInvalid(at+"/collection", "must be a string: a collection name, or deliveries")
			}
			var s string
			_ = json.Unmarshal(v, &s)
			it.collection, hasCollection = s, true
		case "snapshot":
			it.body, hasSnapshot = bytes.Clone(v), true
		case "delivery":
			it.body, hasDelivery = bytes.Clone(v), true
		default:
			return batchItem{}, batchInvalid(at+"/"+pointerToken(name), "is not a member of an item: it has collection and snapshot (or delivery)")
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return batchItem{}, batchSyntax(err, "")
	}
	it.delivery = it.collection == batchDeliveries
	_, known := catalog.Lookup(it.collection)
	switch {
	case !hasCollection:
		return batchItem{}, batchInvalid(at+"/collection", "is required")
	case !it.delivery && !known:
		return batchItem{}, batchInvalid(at+"/collection", "is not one of the 24 collections (see GET /v1/restaurants/{restaurantId}/collections), nor deliveries")
	case it.delivery && (!hasDelivery || hasSnapshot):
		return batchItem{}, batchInvalid(at, "a deliveries item carries delivery (the body of PUT .../deliveries/{deliveryId}) and no snapshot")
	case !it.delivery && (!hasSnapshot || hasDelivery):
		return batchItem{}, batchInvalid(at, "a collection's item carries snapshot (the body of its PUT .../mutations/{mutationId}) and no delivery")
	}
	return it, nil
}

func batchInvalid(pointer, detail string) error {
	return validate.Invalid([]apperr.FieldError{{Pointer: pointer, Detail: detail}})
}

// batchSyntax is the 400 of a batch whose text is not what a batch is:
// the parser's account of where, or detail when the text is JSON of
// another shape.
func batchSyntax(err error, detail string) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) || (err != nil && detail == "") {
		return apperr.New(apperr.Invalid, "The body is not valid JSON: %s.", strings.TrimPrefix(err.Error(), "jsontext: "))
	}
	if detail == "" {
		detail = "The body is not a batch."
	}
	return apperr.New(apperr.Invalid, "%s", detail)
}

// pointerToken escapes a member name for a JSON Pointer (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
