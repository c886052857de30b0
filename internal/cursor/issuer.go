package cursor

import (
	"errors"
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/metrics"
)

// Kind names what a cursor continues. It is sealed into every cursor, so a
// cursor of one list never opens another, and its values never change:
// cursors kept by clients for months carry them.
type Kind string

// The kinds of cursor the service issues.
const (
	// KindRecords continues a collection walk (its nextCursor).
	KindRecords Kind = "records"
	// KindChanges starts a changes walk of a collection (the changesCursor
	// of a walk's last page).
	KindChanges Kind = "changes"
	// KindDeliveries continues a delivery list.
	KindDeliveries Kind = "deliveries"
	// KindDeliveryChanges continues a restaurant's deliveries in receive
	// order (GET .../delivery-changes).
	KindDeliveryChanges Kind = "delivery-changes"
	// KindStreamChanges continues a key-wide listing of changed streams,
	// or starts the next (GET /v1/changes).
	KindStreamChanges Kind = "stream-changes"
	// KindRecordFeed continues the key-wide records feed (GET /v1/records).
	KindRecordFeed Kind = "record-feed"
)

// list is what a refusal of a kind of cursor says, and where it is
// counted. The refusals themselves are written once, in refuse.
type list struct {
	walk metrics.Walk
	// issues: the cursors the list hands out, to pass back unchanged.
	issues string
	// other: the parameters a cursor of the kind is bound to, as in "issued
	// for another ..."; keep: how not to mix them up. Empty for a kind bound
	// to nothing, whose only mismatch is a cursor of another list.
	other, keep string
	// restart: what to do instead of using the cursor.
	restart string
	// behind, resync: for a position the data has not reached, what has not
	// reached it and what to do with a copy built from it.
	behind, resync string
}

// fullWalk restarts a collection walk.
const fullWalk = "start a new walk (a full walk, without a cursor)"

var lists = map[Kind]list{
	KindRecords: {walk: metrics.WalkRecords, issues: "nextCursor or changesCursor",
		other: "restaurant, collection or limit", keep: "keep them identical for a whole walk",
		restart: fullWalk + ", or walk again from the changesCursor of your last complete walk"},
	KindChanges: {walk: metrics.WalkChanges, issues: "nextCursor or changesCursor",
		other: "restaurant or collection", keep: "keep one changesCursor per restaurant and collection",
		restart: fullWalk, behind: "this collection has", resync: "rebuild your copy from it"},
	KindDeliveries: {walk: metrics.WalkDeliveries, issues: "nextCursor",
		other: "restaurant, from or to", keep: "keep them identical for a whole walk",
		restart: "start a new walk without a cursor"},
	KindDeliveryChanges: {walk: metrics.WalkDeliveries, issues: "nextCursor or changesCursor",
		other: "restaurant", keep: "keep one cursor per restaurant",
		restart: "start again without a cursor", behind: "this restaurant's deliveries have", resync: "deduplicate on id"},
	KindStreamChanges: {walk: metrics.WalkChanges, issues: "nextCursor or changesCursor",
		restart: "list again without a cursor", behind: "this service has", resync: "compare each stream's head with your copy"},
	KindRecordFeed: {walk: metrics.WalkRecords, issues: "nextCursor",
		restart: "start the feed again (without a cursor)"},
}

// errAhead: a position the data has not reached (see Issuer.Ahead).
var errAhead = errors.New("cursor names a position the data has not reached")

// Issuer issues the cursors of every list of the service and reads them
// back: what each kind carries and is bound to, how long it lasts, which
// positions are valid, and the 400 that refuses one. Handlers only say
// which list they page.
type Issuer struct {
	codec *Codec
	// walkTTL is the lifetime of a collection walk's nextCursors
	// (FOODSAFE_CURSOR_TTL), counted from the walk's first page, and of
	// the records feed's, counted from when it started its current
	// stream. No other cursor expires: the others name positions the service keeps for as
	// long as their data exists.
	walkTTL time.Duration
	// metrics counts refused cursors (nil: off).
	metrics *metrics.Metrics
}

// NewIssuer makes an issuer sealing with codec; m may be nil.
func NewIssuer(codec *Codec, walkTTL time.Duration, m *metrics.Metrics) *Issuer {
	return &Issuer{codec: codec, walkTTL: walkTTL, metrics: m}
}

// open reads a cursor a client sent (given: it sent one, empty or not)
// into pos, refusing one that cannot be used.
func (i *Issuer) open(kind Kind, raw string, given bool, bind []string, pos any) (bool, error) {
	if !given {
		return false, nil
	}
	sealed, err := i.codec.Unseal(raw)
	if err != nil {
		return true, i.refuse(kind, err)
	}
	return true, i.decode(kind, sealed, bind, pos)
}

// decode reads the position of a verified cursor of kind into pos,
// refusing one that cannot be used.
func (i *Issuer) decode(kind Kind, sealed Sealed, bind []string, pos any) error {
	if err := i.codec.Decode(sealed, string(kind), bind, pos); err != nil {
		return i.refuse(kind, err)
	}
	return nil
}

// Ahead is the 400 for a cursor of kind naming a position its data has not
// reached: the data was restored or reset since it was issued. It does not
// say where the data stands: a refusal must not tell a client anything
// about data it could not read.
func (i *Issuer) Ahead(kind Kind) error { return i.refuse(kind, errAhead) }

// refuse is the 400 for a cursor of kind that cannot be used, counted by
// reason.
func (i *Issuer) refuse(kind Kind, err error) error {
	l := lists[kind]
	reason := metrics.CursorMalformed
	var e *apperr.Error
	switch {
	case errors.Is(err, ErrMismatch) && l.other != "":
		reason = metrics.CursorMismatch
		e = apperr.Param("cursor", "was issued for another %s (or by another list); %s, or %s", l.other, l.keep, l.restart)
	case errors.Is(err, ErrExpired):
		reason = metrics.CursorExpired
		e = apperr.Param("cursor", "has expired; %s", l.restart)
	case errors.Is(err, errAhead):
		reason = metrics.CursorAhead
		e = apperr.Param("cursor", "names a position %s not reached (its data was restored or reset since); %s and %s", l.behind, l.restart, l.resync)
	default:
		e = apperr.Param("cursor", "is not a cursor issued by this service for this list (garbage, truncated or altered); pass %s unchanged, or %s", l.issues, l.restart)
	}
	i.metrics.CursorRefused(l.walk, reason)
	return e
}
