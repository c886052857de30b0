package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// DeliveryPos is a keyset position in the newest-first delivery order
// (what a cursor carries, and which positions are valid, is package
// cursor's).
type DeliveryPos struct {
	OccurredAt int64
	ID         string
}

// DeliveryStream is the collection_streams name of a restaurant's
// delivery stream: the counter of its deliveries in receive order. It is
// no collection's name, and GET /v1/changes reports it as "deliveries".
const DeliveryStream = catalog.DeliveryStream

// errDeliveryExists rolls back a delivery insert whose id was taken.
var errDeliveryExists = errors.New("the delivery exists")

// DeliveryCreate inserts an immutable delivery whose request has digest
// (d.ContentDigest). Writing the same content again is a replay
// (replayed=true, nothing changes); different content for an existing id
// is a conflict.
func (s *Store) DeliveryCreate(ctx context.Context, d wire.Delivery, digest []byte) (wire.Delivery, bool, error) {
	if err := noBackfill(ctx, s.q, d.RestaurantID, int64(d.OccurredAt), "/occurredAt"); err != nil {
		return wire.Delivery{}, false, err
	}
	temps, err := json.Marshal(d.TemperatureRecords)
	if err != nil {
		return wire.Delivery{}, false, err
	}
	p := db.DeliveryInsertParams{
		RestaurantID: d.RestaurantID, ID: d.ID, OccurredAt: int64(d.OccurredAt), IsCompliant: d.IsCompliant,
		SupplierID: d.Supplier.ID, SupplierName: d.Supplier.Name, TemperatureRecords: temps,
		NonComplianceReasons: d.NonComplianceReasons, CorrectiveActions: d.CorrectiveActions,
		Commentary: d.Commentary, ImageCount: d.ImageCount, ContentSha256: digest,
	}
	var row db.Delivery
	// The position is taken under the delivery stream's row lock, held to
	// commit, so positions commit in order (DeliveryChanges relies on it).
	// An id that exists already rolls the position back: replays leave no
	// gap and do not make the stream look changed.
	err = s.inTx(ctx, func(q *db.Queries) error {
		// The delivery stream keeps no receivedAt of its own (deliveries
		// carry theirs): received_at 0 leaves its last_received_at as is.
		next, err := q.StreamNextSequence(ctx, db.StreamNextSequenceParams{RestaurantID: d.RestaurantID, Collection: DeliveryStream})
		if err != nil {
			return err
		}
		p.ReceivedSequence = next.LastSequence
		var inserted db.DeliveryInsertRow
		inserted, err = q.DeliveryInsert(ctx, p)
		row = deliveryOfRow(db.DeliveryGetRow(inserted))
		if errors.Is(err, pgx.ErrNoRows) {
			return errDeliveryExists
		}
		return err
	})
	switch {
	case err == nil:
		out, err := deliveryFromRow(row)
		return out, false, err
	case !errors.Is(err, errDeliveryExists):
		return wire.Delivery{}, false, err
	}
	// The id exists (possibly inserted by a racing identical request, which
	// ON CONFLICT waited for): same content is a replay.
	existing, err := s.q.DeliveryGet(ctx, db.DeliveryGetParams{RestaurantID: d.RestaurantID, ID: d.ID})
	if err != nil {
		return wire.Delivery{}, false, translate(err)
	}
	if !bytes.Equal(existing.ContentSha256, digest) {
		return wire.Delivery{}, false, apperr.New(apperr.Conflict,
			"Delivery %s already exists with different content; deliveries are immutable.", d.ID)
	}
	out, err := deliveryFromRow(deliveryOfRow(existing))
	return out, true, err
}

// DeliveryKey names one delivery: the restaurant and delivery id of every
// delivery-level request path.
type DeliveryKey struct {
	RestaurantID string
	DeliveryID   string
}

// DeliveryGet reads one delivery, or the one 404.
func (s *Store) DeliveryGet(ctx context.Context, k DeliveryKey) (wire.Delivery, error) {
	row, err := s.q.DeliveryGet(ctx, db.DeliveryGetParams{RestaurantID: k.RestaurantID, ID: k.DeliveryID})
	if err != nil {
		return wire.Delivery{}, translate(err)
	}
	return deliveryFromRow(deliveryOfRow(row))
}

// DeliveryListParams selects one page of a restaurant's deliveries.
type DeliveryListParams struct {
	RestaurantID string
	// From and To bound occurredAt (epoch ms), both included.
	From, To int64
	Limit    int
	// MaxBytes ends the page early, with the delivery whose bytes reach
	// it (0: no bound).
	MaxBytes int64
	// After is where the previous page ended; nil for the first page.
	After *DeliveryPos
}

// DeliveryList reads up to p.Limit deliveries with occurredAt in
// [p.From, p.To], newest first, after p.After when given. more reports
// whether another page exists: one extra row is fetched, so a page that
// ends the range exactly is known to be the last.
func (s *Store) DeliveryList(ctx context.Context, p DeliveryListParams) (page []wire.Delivery, more bool, err error) {
	buf := deliveryRows.Get().(*[]db.Delivery)
	rows := slices.Grow((*buf)[:0], p.Limit+1)
	var cut bool
	if p.After == nil {
		rows, cut, err = pgrows.DeliveryListFirstInto(ctx, s.pool, db.DeliveryListFirstParams{
			RestaurantID: p.RestaurantID, FromMs: p.From, ToMs: p.To, MaxRows: int32(p.Limit + 1)}, rows, p.MaxBytes)
	} else {
		rows, cut, err = pgrows.DeliveryListAfterInto(ctx, s.pool, db.DeliveryListAfterParams{
			RestaurantID: p.RestaurantID, FromMs: p.From, AfterOccurredAt: p.After.OccurredAt, AfterID: p.After.ID, MaxRows: int32(p.Limit + 1)}, rows, p.MaxBytes)
	}
	defer putDeliveryRows(buf, rows) // every row read, the look-ahead row too
	if err != nil {
		return nil, false, translate(err)
	}
	if len(rows) > p.Limit {
		rows, more = rows[:p.Limit], true
	}
	more = more || cut
	page = make([]wire.Delivery, len(rows))
	var dec tempsDecoder
	for i, r := range rows {
		if page[i], err = dec.fromRow(r); err != nil {
			return nil, false, err
		}
	}
	return page, more, nil
}

// deliveryRows keeps the row buffers of delivery pages between requests,
// as walkRows does for walk pages (pgrows.DeliveryListFirstInto says what this
// saves).
var deliveryRows = sync.Pool{New: func() any { return new([]db.Delivery) }}

// putDeliveryRows returns a page's row buffer to deliveryRows, emptied: the
// pool keeps no delivery. A buffer grown past a page of the largest limit
// and its look-ahead row is let go.
func putDeliveryRows(buf *[]db.Delivery, rows []db.Delivery) {
	if cap(rows) > 2*(wire.MaxLimit+1) {
		return
	}
	clear(rows)
	*buf = rows[:0]
	deliveryRows.Put(buf)
}

func deliveryFromRow(r db.Delivery) (wire.Delivery, error) {
	var dec tempsDecoder
	return dec.fromRow(r)
}

// tempsDecoder reads the temperature records of deliveries; one serves a
// page, so its decoder is made once per page, not per delivery, and only
// for a page that has any.
type tempsDecoder struct {
	rd  *bytes.Reader
	dec *jsontext.Decoder
}

func (t *tempsDecoder) fromRow(r db.Delivery) (wire.Delivery, error) {
	d := wire.Delivery{
		ID: r.ID, RestaurantID: r.RestaurantID, OccurredAt: wire.Millis(r.OccurredAt), IsCompliant: r.IsCompliant,
		Supplier:             wire.Supplier{ID: r.SupplierID, Name: r.SupplierName},
		NonComplianceReasons: nonNil(r.NonComplianceReasons), CorrectiveActions: nonNil(r.CorrectiveActions),
		Commentary: r.Commentary, ImageCount: r.ImageCount,
		// A device clock ahead of the service's (within the skew ingest
		// allows) checked a delivery "after" it was received: raised to
		// occurredAt, as a record's receivedAt is raised to its
		// capturedAt, so that receivedAt - occurredAt is never negative.
		ReceivedAt: wire.Millis(max(r.ReceivedAt.UnixMilli(), r.OccurredAt)),
	}
	var ok bool
	if d.TemperatureRecords, ok = t.decode(r.TemperatureRecords); !ok {
		// Anything but the plain shape ingest stores goes through
		// encoding/json, which has the last word on what it means.
		// (Into a variable of its own: a pointer into d would move d to
		// the heap on every call.)
		var recs []wire.TemperatureRecord
		dec := json.NewDecoder(bytes.NewReader(r.TemperatureRecords))
		dec.UseNumber()
		err := dec.Decode(&recs)
		d.TemperatureRecords = recs
		if err != nil {
			return d, fmt.Errorf("delivery %s: temperature_records: %w", r.ID, err)
		}
	}
	d.TemperatureRecords = nonNil(d.TemperatureRecords)
	return d, nil
}

// decode reads the shape ingest stores, an array of objects whose
// members are product, lotNumber and unit (strings) and value (a number),
// each at most once, as encoding/json with UseNumber reads it, without
// reflection (it was most of a delivery page's decoding). ok is false
// for anything else (another member, null, a name in other case, invalid
// UTF-8...), which the caller hands to encoding/json.
func (t *tempsDecoder) decode(raw []byte) (recs []wire.TemperatureRecord, ok bool) {
	if string(raw) == "[]" {
		return []wire.TemperatureRecord{}, true
	}
	if t.dec == nil {
		t.rd = bytes.NewReader(raw)
		t.dec = jsontext.NewDecoder(t.rd)
	} else {
		t.rd.Reset(raw) // read in place: the row's bytes are not copied
		t.dec.Reset(t.rd)
	}
	if !t.next('[') {
		return nil, false
	}
	recs = []wire.TemperatureRecord{}
	for t.dec.PeekKind() == '{' {
		rec, ok := t.record()
		if !ok {
			return nil, false
		}
		recs = append(recs, rec)
	}
	if !t.next(']') {
		return nil, false
	}
	if _, err := t.dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return recs, true
}

// next reads the next token, which must be of kind.
func (t *tempsDecoder) next(kind jsontext.Kind) bool {
	tok, err := t.dec.ReadToken()
	return err == nil && tok.Kind() == kind
}

// record reads one temperature record, an object, as decode describes.
func (t *tempsDecoder) record() (rec wire.TemperatureRecord, ok bool) {
	if !t.next('{') {
		return rec, false
	}
	for t.dec.PeekKind() == '"' {
		if !t.member(&rec) {
			return rec, false
		}
	}
	return rec, t.next('}')
}

// member reads one member of a record into rec: false for a name the
// shape has not, or a value of the wrong kind.
func (t *tempsDecoder) member(rec *wire.TemperatureRecord) bool {
	// A token lasts until the next is read: the name is looked at first.
	name, err := t.dec.ReadToken()
	if err != nil {
		return false
	}
	var dst *string
	switch name.String() {
	case "product":
		dst = &rec.Product
	case "lotNumber":
		dst = &rec.LotNumber
	case "unit":
		dst = &rec.Unit
	case "value":
	default:
		return false
	}
	v, err := t.dec.ReadToken()
	if err != nil {
		return false
	}
	if dst == nil { // value
		if v.Kind() != '0' {
			return false
		}
		rec.Value = json.Number(v.String())
		return true
	}
	if v.Kind() != '"' {
		return false
	}
	*dst = v.String()
	return true
}

// nonNil makes empty lists serialise as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ErrAheadOfDeliveries: a delivery changes cursor names a position the
// restaurant's delivery stream has not reached (its data was restored or
// reset since the cursor was issued).
var ErrAheadOfDeliveries = errors.New("position beyond the head of the delivery stream")

// DeliveryChanges reads up to limit deliveries received after position
// after, in receive order, whatever their occurredAt. last is the position
// of the page's last delivery (after itself when the page is empty): a
// later call from it returns what was received since. more reports
// whether another page follows. The page also ends with the delivery whose
// bytes reach maxBytes (0: no bound). An empty page from a position
// beyond the stream's head is ErrAheadOfDeliveries.
func (s *Store) DeliveryChanges(ctx context.Context, restaurantID string, after int64, limit int, maxBytes int64) (page []wire.Delivery, last int64, more bool, err error) {
	buf := deliveryRows.Get().(*[]db.Delivery)
	rows, cut, err := pgrows.DeliveryChangesPageInto(ctx, s.pool, db.DeliveryChangesPageParams{RestaurantID: restaurantID, AfterSequence: after,
		MaxRows: int32(limit + 1)}, slices.Grow((*buf)[:0], limit+1), maxBytes)
	defer putDeliveryRows(buf, rows)
	if err != nil {
		return nil, 0, false, translate(err)
	}
	if len(rows) > limit {
		rows, more = rows[:limit], true
	}
	more = more || cut
	last = after
	if len(rows) == 0 && after > 0 {
		head, err := s.q.StreamHead(ctx, db.StreamHeadParams{RestaurantID: restaurantID, Collection: DeliveryStream})
		if err != nil {
			return nil, 0, false, translate(err)
		}
		if after > head {
			return nil, 0, false, ErrAheadOfDeliveries
		}
	}
	page = make([]wire.Delivery, len(rows))
	var dec tempsDecoder
	for i, r := range rows {
		if page[i], err = dec.fromRow(r); err != nil {
			return nil, 0, false, err
		}
		last = r.ReceivedSequence
	}
	return page, last, more, nil
}
