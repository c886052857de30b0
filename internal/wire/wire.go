// Package model holds the resources of the spec as they travel on the wire:
// our own structs with the spec's JSON names, shared by the store (which
// fills them from rows) and the HTTP layer (which serialises them).
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
	ID   string `json:"id"`
	Name string `json:"name"`
}

// TemperatureRecord is one measurement of a delivery check. Unit is kept
// exactly as received.
type TemperatureRecord struct {
	Product   string      `json:"product"`
	LotNumber string      `json:"lotNumber"`
	Unit      string      `json:"unit"`
	Value     json.Number `json:"value"`
}

// Delivery is spec 2.2.
type Delivery struct {
	ID                   string              `json:"id"`
	RestaurantID         string              `json:"restaurantId"`
	OccurredAt           Millis              `json:"occurredAt"`
	IsCompliant          bool                `json:"isCompliant"`
	Supplier             Supplier            `json:"supplier"`
	TemperatureRecords   []TemperatureRecord `json:"temperatureRecords"`
	NonComplianceReasons []string            `json:"nonComplianceReasons"`
	CorrectiveActions    []string            `json:"correctiveActions"`
	Commentary           *string             `json:"commentary"`
	ImageCount           int64               `json:"imageCount"`
}

// Page is a list page with its continuation.
type Page[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

// WalkPage is a page of a collection walk: a Page plus the changes cursor.
// ChangesCursor is always present so that every page has one shape: a
// token on the last page (NextCursor null), null on every other page.
type WalkPage struct {
	Data          []Envelope `json:"data"`
	NextCursor    *string    `json:"nextCursor"`
	ChangesCursor *string    `json:"changesCursor"`
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
	ID             string          `json:"id"`
	RestaurantID   string          `json:"restaurantId"`
	Collection     string          `json:"collection"`
	Data           json.RawMessage `json:"data,omitempty"`
	Deleted        bool            `json:"deleted"`
	CapturedAt     Millis          `json:"capturedAt"`
	ReceivedAt     Millis          `json:"receivedAt"`
	Sequence       Sequence        `json:"sequence"`
	MutationID     string          `json:"mutationId"`
	SourceVersion  *string         `json:"sourceVersion"`
	PayloadVersion int32           `json:"payloadVersion"`
	StateKind      string          `json:"stateKind"`
}

// CollectionDescriptor describes a readable collection (spec 2.4).
type CollectionDescriptor struct {
	Collection     string `json:"collection"`
	ReadScope      string `json:"readScope"`
	Description    string `json:"description"`
	StateKind      string `json:"stateKind"`
	PayloadVersion int    `json:"payloadVersion"`
}

// FileItem is an entry of the assets endpoint (spec 2.7) and of the
// delivery images list: a verified file and a signed URL to fetch it.
type FileItem struct {
	ID           string `json:"id"`
	ContentType  string `json:"contentType"`
	ByteLength   int64  `json:"byteLength"`
	SHA256       string `json:"sha256"`
	UploadedAt   Millis `json:"uploadedAt"`
	URL          string `json:"url"`
	URLExpiresAt Millis `json:"urlExpiresAt"`
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
	RestaurantID string   `json:"restaurantId"`
	Scopes       []string `json:"scopes"`
}
