package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
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

// batchItem is one item of a batch as sent: the body its single PUT would
// carry (a snapshot or a delivery), and where it stands.
type batchItem struct {
	collection string
	body       []byte
	delivery   bool
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
