package partnerapi

import "encoding/json"

// The resources as the API sends them (the spec's section 2), as far as
// the mirror reads them; unknown members are ignored, as the versioning
// rules ask.

// Grant is an item of GET /v1/restaurants: a restaurant the key reaches,
// with its scopes there.
type Grant struct {
	RestaurantID string   `json:"restaurantId"`
	Scopes       []string `json:"scopes"`
}

// Envelope is a record (spec 2.3).
type Envelope struct {
	ID             string          `json:"id"`
	Data           json.RawMessage `json:"data"`
	Deleted        bool            `json:"deleted"`
	CapturedAt     string          `json:"capturedAt"`
	ReceivedAt     string          `json:"receivedAt"`
	Sequence       string          `json:"sequence"`
	MutationID     string          `json:"mutationId"`
	SourceVersion  *string         `json:"sourceVersion"`
	PayloadVersion int64           `json:"payloadVersion"`
}

// WalkPage is a page of a collection's walk.
type WalkPage struct {
	Data          []Envelope `json:"data"`
	NextCursor    *string    `json:"nextCursor"`
	ChangesCursor *string    `json:"changesCursor"`
}

// Delivery is the part of a delivery (spec 2.2) the mirror keeps in
// columns of its own; the whole delivery is kept as sent.
type Delivery struct {
	ID          string `json:"id"`
	OccurredAt  string `json:"occurredAt"`
	IsCompliant bool   `json:"isCompliant"`
	Supplier    struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"supplier"`
	ImageCount int64 `json:"imageCount"`
}

// DeliveryPage is a page of GET .../delivery-changes, each delivery as
// sent.
type DeliveryPage struct {
	Data          []json.RawMessage `json:"data"`
	NextCursor    *string           `json:"nextCursor"`
	ChangesCursor *string           `json:"changesCursor"`
}

// StreamChange is an item of GET /v1/changes.
type StreamChange struct {
	RestaurantID string `json:"restaurantId"`
	Stream       string `json:"stream"`
	Head         string `json:"head"`
}

// ChangesPage is a page of GET /v1/changes.
type ChangesPage struct {
	Data          []StreamChange `json:"data"`
	NextCursor    *string        `json:"nextCursor"`
	ChangesCursor *string        `json:"changesCursor"`
}

// FeedItem is an item of GET /v1/records: a record of a collection, or a
// delivery.
type FeedItem struct {
	RestaurantID string          `json:"restaurantId"`
	Stream       string          `json:"stream"`
	Record       *Envelope       `json:"record"`
	Delivery     json.RawMessage `json:"delivery"`
}

// FeedStream is a stream a page of GET /v1/records ended, with the
// cursor and head a walk of it would have ended at.
type FeedStream struct {
	RestaurantID  string `json:"restaurantId"`
	Stream        string `json:"stream"`
	Head          string `json:"head"`
	ChangesCursor string `json:"changesCursor"`
}

// FeedPage is a page of GET /v1/records.
type FeedPage struct {
	Data          []FeedItem   `json:"data"`
	Streams       []FeedStream `json:"streams"`
	NextCursor    *string      `json:"nextCursor"`
	ChangesCursor *string      `json:"changesCursor"`
}

// FileItem is an entry of the assets endpoint and of the delivery image
// list (spec 2.7).
type FileItem struct {
	ID           string `json:"id"`
	ContentType  string `json:"contentType"`
	ByteLength   int64  `json:"byteLength"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresAt string `json:"urlExpiresAt"`
}

// FileList is the assets endpoint's or the image list's answer.
type FileList struct {
	Data []FileItem `json:"data"`
}
