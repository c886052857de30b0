// Package wire holds the resources of the spec as they travel on the wire:
// our own structs with the spec's JSON names, shared by the store (which
// fills them from rows) and the HTTP layer (which serialises them). The
// jsonschema tags describe each field in the output schemas of the MCP
// tools, which send these same structs; a number a tag quotes is a
// placeholder such as {url-lifetime} that the tools fill from the constant
// enforcing it.
package wire

import (
	"encoding/json"
	"errors"
	"strconv"
)

// TimestampPattern is the wire form of a timestamp (spec 1 and 4.6): epoch
// milliseconds as at most 19 digits, no leading zero unless exactly "0".
const TimestampPattern = `^(0|[1-9][0-9]{0,18})$`

// Page sizes of the delivery list and collection walks (spec 8).
const (
	MinLimit     = 1
	MaxLimit     = 100
	DefaultLimit = 50
)

// Page sizes of the key-wide records feed (GET /v1/records): its items are
// mostly small records of many streams, and a first sync costs its pages.
const (
	MaxFeedLimit     = 500
	DefaultFeedLimit = 100
)

// Millis is epoch milliseconds, carried on the wire as a string of digits.
type Millis int64

// MarshalJSON writes the digit string.
func (m Millis) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(m), 10) + `"`), nil
}

// Errors of ParseMillis.
var (
	// ErrMillis explains a timestamp that is not a digit string.
	ErrMillis = errors.New("must be epoch milliseconds as a string of digits: no sign, no leading zero unless exactly 0, at most 19 digits, at most 9223372036854775807")
	// ErrMillisOverflow is a well-formed 19-digit string beyond int64,
	// which the database cannot hold.
	ErrMillisOverflow = errors.New("exceeds the largest storable timestamp 9223372036854775807")
)

// ParseMillis accepts the wire form of a timestamp: digits only, no
// leading zero unless exactly "0", at most 19 digits, and within int64
// (what the database holds).
func ParseMillis(s string) (Millis, error) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, ErrMillis
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, ErrMillis
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrMillisOverflow
	}
	return Millis(v), nil
}

// Supplier is embedded in a delivery.
type Supplier struct {
	ID   string `json:"id" jsonschema:"Supplier id."`
	Name string `json:"name" jsonschema:"Supplier name."`
}

// TemperatureRecord is one measurement of a delivery check. Unit is kept
// exactly as received.
type TemperatureRecord struct {
	Product   string      `json:"product" jsonschema:"Product measured."`
	LotNumber string      `json:"lotNumber" jsonschema:"Lot number of the product."`
	Unit      string      `json:"unit" jsonschema:"Unit of value, exactly as recorded."`
	Value     json.Number `json:"value" jsonschema:"The temperature measured."`
}

// Delivery is spec 2.2.
type Delivery struct {
	ID                   string              `json:"id" jsonschema:"Delivery id, unique within the restaurant."`
	RestaurantID         string              `json:"restaurantId" jsonschema:"The restaurant that received the delivery."`
	OccurredAt           Millis              `json:"occurredAt" jsonschema:"When the delivery was checked: epoch milliseconds as a string of digits; the list ordering key."`
	IsCompliant          bool                `json:"isCompliant" jsonschema:"Whether the delivery was compliant."`
	Supplier             Supplier            `json:"supplier" jsonschema:"Who delivered."`
	TemperatureRecords   []TemperatureRecord `json:"temperatureRecords" jsonschema:"Measurements taken during the check."`
	NonComplianceReasons []string            `json:"nonComplianceReasons" jsonschema:"Free-text reasons the delivery was not compliant."`
	CorrectiveActions    []string            `json:"correctiveActions" jsonschema:"Free-text actions taken."`
	Commentary           *string             `json:"commentary" jsonschema:"Note, or null."`
	ImageCount           int64               `json:"imageCount" jsonschema:"Number of photographs taken during the check, as the provider counted them; not checked against the delivery's images, which may be fewer (not all uploaded yet) or more."`
	// ReceivedAt is the service's, not the provider's: set when the
	// delivery was stored, never read from a request, and left out of
	// its content digest (ContentDigest).
	ReceivedAt Millis `json:"receivedAt" jsonschema:"When the service received the delivery: epoch milliseconds as a string of digits; later than occurredAt, possibly by hours or days when the device uploaded late (never earlier: a device clock ahead of the service's, within the allowed skew, is raised to occurredAt, as a record's receivedAt is raised to its capturedAt)."`
}

// ContentDigest is RequestDigest of the delivery as its provider sent it,
// the digest that tells a replay from a conflict (deliveries'
// content_sha256). ReceivedAt is the service's, so it is not part of it:
// the digests stored before the service sent receivedAt stay the digests
// of the same requests.
func (d Delivery) ContentDigest() ([]byte, error) {
	return RequestDigest(struct {
		Delivery
		// Hides the embedded member of the same name (the shallower
		// field wins) and, being zero, leaves it out.
		ReceivedAt Millis `json:"receivedAt,omitzero"`
	}{Delivery: d})
}

// Page is a list page with its continuation.
type Page[T any] struct {
	Data       []T     `json:"data" jsonschema:"The items of this page, possibly none."`
	NextCursor *string `json:"nextCursor" jsonschema:"Pass it unchanged as cursor, with every other parameter unchanged, for the next page; null on the last page."`
}

// WalkPage is a page of a collection walk: a Page plus the changes cursor.
// ChangesCursor is always present so that every page has one shape: a
// token on the last page (NextCursor null), null on every other page.
type WalkPage struct {
	Data          []Envelope `json:"data" jsonschema:"The records of this page, by sequence ascending, possibly none."`
	NextCursor    *string    `json:"nextCursor" jsonschema:"Pass it unchanged as cursor, with every other parameter unchanged, for the next page of this walk; null on the last page."`
	ChangesCursor *string    `json:"changesCursor" jsonschema:"On the last page only (null before): keep it with your copy, and walk from it later to get only what changed since; it never expires."`
}

// UnmarshalJSON reads the digit string with ParseMillis's rules.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return ErrMillis
	}
	v, err := ParseMillis(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// StateKind is the only kind of collection state this service holds.
const StateKind = "received-shadow-snapshot"

// Sequence is a position in a change stream, carried as a digit string:
// clients compare it, never do arithmetic on it.
type Sequence int64

// MarshalJSON writes the digit string.
func (s Sequence) MarshalJSON() ([]byte, error) { return Millis(s).MarshalJSON() }

// Envelope is a collection record as received (spec 2.3). Data is absent
// on a tombstone.
type Envelope struct {
	ID             string          `json:"id" jsonschema:"Record id, unique within the collection."`
	RestaurantID   string          `json:"restaurantId" jsonschema:"The restaurant the record belongs to."`
	Collection     string          `json:"collection" jsonschema:"The record's collection, one of the 24: it says which schema data follows (describe_collection gives it)."`
	Data           json.RawMessage `json:"data,omitempty" jsonschema:"The record itself, of its collection's data schema (describe_collection gives it); absent on a tombstone."`
	Deleted        bool            `json:"deleted" jsonschema:"true: a tombstone, the record was deleted."`
	CapturedAt     Millis          `json:"capturedAt" jsonschema:"When the device recorded the change: epoch milliseconds as a string of digits."`
	ReceivedAt     Millis          `json:"receivedAt" jsonschema:"When the service received it: epoch milliseconds as a string of digits."`
	Sequence       Sequence        `json:"sequence" jsonschema:"Position in the change stream, as a string of digits; compare only, a higher one is a newer state."`
	MutationID     string          `json:"mutationId" jsonschema:"Identifier of the change that produced this state; the deduplication key for clients."`
	SourceVersion  *string         `json:"sourceVersion" jsonschema:"Version stamp of the originating record, or null."`
	PayloadVersion int32           `json:"payloadVersion" jsonschema:"Currently always 1."`
	StateKind      string          `json:"stateKind" jsonschema:"Always received-shadow-snapshot."`
}

// CollectionDescriptor describes a readable collection (spec 2.4).
type CollectionDescriptor struct {
	Collection     string `json:"collection" jsonschema:"Collection name, as walk_records and the REST paths take it."`
	ReadScope      string `json:"readScope" jsonschema:"The scope that opens it for reading."`
	Description    string `json:"description" jsonschema:"What its records are."`
	StateKind      string `json:"stateKind" jsonschema:"Always received-shadow-snapshot."`
	PayloadVersion int    `json:"payloadVersion" jsonschema:"Currently always 1."`
}

// CollectionSchema is a collection and the JSON Schema of its records'
// data: the answer of the MCP tool describe_collection.
type CollectionSchema struct {
	Collection   string          `json:"collection" jsonschema:"The collection, as records carry it in collection and as walk_records and get_record take it."`
	Description  string          `json:"description" jsonschema:"What its records are."`
	ReadScope    string          `json:"readScope" jsonschema:"The scope that opens it for reading."`
	CarriesFiles bool            `json:"carriesFiles" jsonschema:"true: each record names an uploaded file (data.asset), which list_assets lists with a download URL."`
	DataSchema   json.RawMessage `json:"dataSchema" jsonschema:"The JSON Schema (draft 2020-12) of the data of the collection's records, self-contained (the shared definitions it uses under $defs): the schema the service validates ingest with, and the OpenAPI document's component of the collection's data."`
}

// FileItem is an entry of the assets endpoint (spec 2.7) and of the
// delivery images list: a verified file and a signed URL to fetch it.
type FileItem struct {
	ID           string `json:"id" jsonschema:"Asset: its objectKey. Image: its image id."`
	ContentType  string `json:"contentType" jsonschema:"Media type."`
	ByteLength   int64  `json:"byteLength" jsonschema:"Size in bytes."`
	SHA256       string `json:"sha256" jsonschema:"Digest of the bytes; equal digest, no need to download again."`
	UploadedAt   Millis `json:"uploadedAt" jsonschema:"When the upload was verified: epoch milliseconds as a string of digits."`
	URL          string `json:"url" jsonschema:"Signed download URL carrying its own authorisation; no header needed."`
	URLExpiresAt Millis `json:"urlExpiresAt" jsonschema:"When url stops working ({url-lifetime}): epoch milliseconds as a string of digits."`
}

// Session is the answer of POST /v1/mobile/sessions.
type Session struct {
	AccessToken string            `json:"accessToken"`
	TokenType   string            `json:"tokenType"`
	ExpiresAt   Millis            `json:"expiresAt"`
	Restaurants []RestaurantGrant `json:"restaurants"`
}

// RestaurantGrant is one entry of GET /v1/restaurants (spec 2.1).
type RestaurantGrant struct {
	RestaurantID string   `json:"restaurantId" jsonschema:"Restaurant id, as every other tool and path takes it."`
	Scopes       []string `json:"scopes" jsonschema:"The scopes the key holds there, sorted."`
}

// StreamChange is a stream a key reads that changed (GET /v1/changes): a
// collection of a restaurant, or its deliveries, with its position now.
type StreamChange struct {
	RestaurantID string   `json:"restaurantId" jsonschema:"The restaurant, as list_restaurants returns it."`
	Stream       string   `json:"stream" jsonschema:"A collection name, or deliveries."`
	Head         Sequence `json:"head" jsonschema:"The stream's position now; compare it with the one you hold (higher: something changed), no arithmetic."`
}

// ChangesPage is a page of a listing of changes: a Page plus the cursor
// of the next listing. Like WalkPage, every page has both members: the
// changes cursor on the last page only.
type ChangesPage[T any] struct {
	Data          []T     `json:"data" jsonschema:"The items of this page, possibly none."`
	NextCursor    *string `json:"nextCursor" jsonschema:"Pass it unchanged as cursor for the next page; null on the last page."`
	ChangesCursor *string `json:"changesCursor" jsonschema:"On the last page only (null before): keep it, and pass it as cursor later to get only what changed since; it never expires."`
}
