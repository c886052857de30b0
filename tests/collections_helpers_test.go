package tests

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// collectionFixture is one entry of testdata/collections.json: a full and
// a minimal valid `data`, and where in it each kind of invalid value goes
// (null where the collection has no such field).
type collectionFixture struct {
	Full      map[string]any `json:"full"`
	Minimal   map[string]any `json:"minimal"`
	Text      *string        `json:"text"`
	Array     *string        `json:"array"`
	Timestamp *string        `json:"timestamp"`
	ID        *string        `json:"id"`
	WrongType string         `json:"wrongType"`
}

func loadCollectionFixtures(t testing.TB) map[string]collectionFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/collections.json")
	require.NoError(t, err)
	var f map[string]collectionFixture
	require.NoError(t, json.Unmarshal(b, &f))
	return f
}

// snapshot builds an ingest body.
func snapshot(restaurant, id, mutation string, capturedAt int64, deleted bool, data any) map[string]any {
	b := map[string]any{
		"id": id, "restaurantId": restaurant, "mutationId": mutation, "payloadVersion": 1,
		"capturedAt": strconv.FormatInt(capturedAt, 10), "sourceVersion": nil, "deleted": deleted,
	}
	if data != nil {
		b["data"] = data
	}
	return b
}

func ingestPath(restaurant, collection, id, mutation string) string {
	return "/v1/ingest/restaurants/" + restaurant + "/collections/" + collection + "/records/" + id + "/mutations/" + mutation
}

// ingest PUTs a snapshot with the Idempotency-Key header set to mutation.
func (a *app) ingest(key, restaurant, collection, id, mutation string, body any) response {
	a.t.Helper()
	return a.putJSON(key, ingestPath(restaurant, collection, id, mutation), body, "Idempotency-Key", mutation)
}

// put is ingest of a live record that must succeed.
func (a *app) put(key, restaurant, collection, id, mutation string, data any) envelopeDoc {
	a.t.Helper()
	r := a.ingest(key, restaurant, collection, id, mutation, snapshot(restaurant, id, mutation, 1_700_000_000_000, false, data))
	require.Equal(a.t, http.StatusOK, r.Status, "body: %s", r.Body)
	var out struct{ Data envelopeDoc }
	r.JSON(a.t, &out)
	return out.Data
}

// envelopeDoc is an envelope as a client decodes it.
type envelopeDoc struct {
	ID             string          `json:"id"`
	RestaurantID   string          `json:"restaurantId"`
	Collection     string          `json:"collection"`
	Data           json.RawMessage `json:"data"`
	Deleted        bool            `json:"deleted"`
	CapturedAt     string          `json:"capturedAt"`
	ReceivedAt     string          `json:"receivedAt"`
	Sequence       string          `json:"sequence"`
	MutationID     string          `json:"mutationId"`
	SourceVersion  *string         `json:"sourceVersion"`
	PayloadVersion json.Number     `json:"payloadVersion"`
	StateKind      string          `json:"stateKind"`
}

func (e envelopeDoc) seq(t testing.TB) int64 {
	t.Helper()
	n, err := strconv.ParseInt(e.Sequence, 10, 64)
	require.NoError(t, err)
	return n
}

type walkPage struct {
	Data          []envelopeDoc `json:"data"`
	NextCursor    *string       `json:"nextCursor"`
	ChangesCursor *string       `json:"changesCursor"`
}

func recordsPath(restaurant, collection string) string {
	return "/v1/restaurants/" + restaurant + "/collections/" + collection + "/records"
}
