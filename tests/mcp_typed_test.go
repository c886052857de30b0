package tests

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// toolsListBudget bounds the bytes of tools/list for a key that sees every
// tool: a client sends the list to its model with every conversation, so
// records name their collection from an enum and describe_collection gives
// a collection's data schema, instead of 24 data schemas inlined in each
// tool that carries records.
const toolsListBudget = 48 << 10

// tools/list of a key that sees every tool stays within its budget; the
// test logs its size (go test -v -run TestMCPToolsListSize ./tests/).
func TestMCPToolsListSize(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants(restA)
	key := a.newKey(grant(restA, "areas:read", "drive-files:read", "deliveries:read", "delivery-images:read"))
	r := a.do(req{Method: http.MethodPost, Path: "/mcp", Body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		Header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json",
			"Accept": "application/json, text/event-stream"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Result.Tools, 12, "every tool")
	t.Logf("tools/list of a key that sees every tool: %d bytes", len(r.Body))
	require.LessOrEqual(t, len(r.Body), toolsListBudget)
}

// With the go-sdk client: a walk's records and a feed's items fit the
// declared output schema, whose collection enum refuses a record of no
// collection; each record's data fits the schema describe_collection
// gives for its collection, a schema that stands alone and refuses data
// of another shape; an unknown collection is a tool error that lists the
// 24 and echoes nothing it was sent.
func TestMCPDescribeCollection(t *testing.T) {
	t.Parallel()
	f := newMCPFixture(t)
	s := f.a.mcpConnect(t, f.keyA, rev1125)
	require.Contains(t, s.toolNames(), "describe_collection")

	var walk struct {
		Data []struct {
			Collection string
			Deleted    bool
			Data       json.RawMessage
		}
	}
	raw := s.ok("walk_records", map[string]any{"restaurantId": restA, "collection": "areas", "limit": 100})
	require.NoError(t, json.Unmarshal(raw, &walk))
	require.Len(t, walk.Data, 5, "four live areas and a tombstone")

	// The declared schema is not a formality: a record of a collection
	// that does not exist does not fit it.
	forged := bytes.Replace(raw, []byte(`"collection":"areas"`), []byte(`"collection":"fridges"`), 1)
	require.NotEqual(t, raw, forged)
	require.Error(t, s.schemas["walk_records"].Validate(decodeJSON(t, string(forged))), "collection is an enum of the 24")

	areas := describe(t, s, "areas")
	live := 0
	for _, r := range walk.Data {
		require.Equal(t, "areas", r.Collection)
		if r.Deleted {
			require.Empty(t, r.Data, "a tombstone has no data")
			continue
		}
		live++
		require.NoError(t, areas.Validate(decodeJSON(t, string(r.Data))), "%s", r.Data)
	}
	require.Equal(t, 4, live)
	require.Error(t, areas.Validate(decodeJSON(t, `{"name":42,"isDeleted":false}`)), "a name is text")
	require.Error(t, areas.Validate(decodeJSON(t, `{"name":"x","isDeleted":false,"fridge":1}`)), "no member beyond the schema's")

	var pic struct{ Data json.RawMessage }
	require.NoError(t, json.Unmarshal(s.ok("get_record", map[string]any{"restaurantId": restA,
		"collection": "cleaning-task-pictures", "recordId": "pic-1"}), &pic))
	require.NoError(t, describe(t, s, "cleaning-task-pictures").Validate(decodeJSON(t, string(pic.Data))))
	require.Error(t, areas.Validate(decodeJSON(t, string(pic.Data))), "a picture is not an area")

	// The feed: every item fits the declared schema (s.ok), a record item
	// its collection's data schema, a delivery item carries a delivery.
	var feed struct {
		Data []struct {
			Stream string
			Record *struct {
				Collection string
				Data       json.RawMessage
			}
			Delivery json.RawMessage
		}
	}
	require.NoError(t, json.Unmarshal(s.ok("walk_all_records", map[string]any{"limit": 500}), &feed))
	streams := map[string]bool{}
	for _, it := range feed.Data {
		streams[it.Stream] = true
		if it.Stream == catalog.DeliveryStream {
			require.NotEmpty(t, it.Delivery)
			continue
		}
		require.NotNil(t, it.Record)
		require.Equal(t, it.Stream, it.Record.Collection)
		if len(it.Record.Data) > 0 {
			require.NoError(t, describe(t, s, it.Stream).Validate(decodeJSON(t, string(it.Record.Data))), "%s %s", it.Stream, it.Record.Data)
		}
	}
	require.Equal(t, map[string]bool{"areas": true, "cleaning-task-pictures": true, "deliveries": true}, streams)

	// Every collection has its schema, and none depends on another document.
	for _, c := range catalog.Collections {
		describe(t, s, c.Name)
	}

	for name, c := range map[string]struct {
		args any
		want string
	}{
		"unknown collection":     {map[string]any{"collection": "fridges"}, `parameter "collection": is not one of the 24 collections: restaurants, users, areas,`},
		"a key as collection":    {map[string]any{"collection": f.keyB}, `parameter "collection": is not one of the 24 collections`},
		"collection as a number": {map[string]any{"collection": 7}, `parameter "collection": must be a string`},
		"no collection":          {map[string]any{}, `parameter "collection": is required`},
		"an argument too many":   {map[string]any{"collection": "areas", "restaurantId": restA}, `parameter "restaurantId": is not an argument of describe_collection`},
	} {
		t.Run(name, func(t *testing.T) {
			text := s.as(t).toolErr("describe_collection", c.args)
			require.Contains(t, text, c.want)
			require.NotContains(t, text, secretOf(f.keyB))
			require.NotContains(t, text, "fridges", "what was sent is not echoed")
		})
	}
	require.NotContains(t, f.a.logs.String(), secretOf(f.keyB))

	// A key that reads no collection does not see the tool.
	d := f.a.mcpConnect(t, f.a.newKey(grant(restA, "deliveries:read")), rev1125)
	require.NotContains(t, d.toolNames(), "describe_collection")
}

// describe calls describe_collection and compiles the schema it gives
// alone: a compiler that may load no other document.
func describe(t *testing.T, s *mcpSession, collection string) *jsonschema.Schema {
	t.Helper()
	var out struct {
		Collection, Description, ReadScope string
		CarriesFiles                       bool
		DataSchema                         json.RawMessage
	}
	require.NoError(t, json.Unmarshal(s.ok("describe_collection", map[string]any{"collection": collection}), &out))
	col, _ := catalog.Lookup(collection)
	require.Equal(t, collection, out.Collection)
	require.Equal(t, col.Description, out.Description)
	require.Equal(t, col.ReadScope(), out.ReadScope)
	require.Equal(t, col.CarriesFiles, out.CarriesFiles)
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoads{})
	require.NoError(t, c.AddResource("data.json", decodeJSON(t, string(out.DataSchema))))
	sch, err := c.Compile("data.json")
	require.NoError(t, err, "%s: the data schema stands alone", collection)
	return sch
}

// refuseLoads is a schema loader that loads nothing.
type refuseLoads struct{}

func (refuseLoads) Load(url string) (any, error) { return nil, &jsonschema.LoadURLError{URL: url} }
