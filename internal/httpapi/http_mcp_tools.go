package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// The MCP tools. Each is the other face of a REST route: it calls the
// route's operation after the route's access check, with the same
// parameters under the same names, and sends the same wire struct as
// structured output (plus a short text rendering, http_mcp_text.go).

// Tool arguments. These types give the input schemas (a jsonschema tag is
// a field's description; an embedded struct's fields are arguments of the
// embedding one); decodeArgs reads calls by their JSON names and Go kinds,
// then the operation parses the values as REST does.

type noArgs struct{}

type restaurantArgs struct {
	RestaurantID string `json:"restaurantId" jsonschema:"The restaurant, as list_restaurants returns it."`
}

type deliveriesArgs struct {
	restaurantArgs
	From   string `json:"from" jsonschema:"Start of the window, inclusive: epoch milliseconds as a string of digits, e.g. \"1767225600000\" (an integer of the same digits is accepted too)."`
	To     string `json:"to" jsonschema:"End of the window, inclusive, at most {max-span} after from: epoch milliseconds as a string of digits (an integer of the same digits is accepted too)."`
	Limit  *int   `json:"limit,omitempty" jsonschema:"Deliveries per page, {limit-range}. Keep it unchanged while paging."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The previous page's nextCursor, unchanged; absent or empty for the first page."`
}

type changesArgs struct {
	Limit  *int   `json:"limit,omitempty" jsonschema:"Streams per page, 1 to 100; 20 when absent."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The previous page's nextCursor, or the changesCursor of an earlier listing's last page to list only what changed since; absent or empty to list every stream that holds anything."`
}

type deliveryChangesArgs struct {
	restaurantArgs
	Limit  *int   `json:"limit,omitempty" jsonschema:"Deliveries per page, 1 to 100; 20 when absent."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The previous page's nextCursor, or the changesCursor of an earlier call's last page to get only the deliveries received since; absent or empty to start at the first delivery received."`
}

type feedArgs struct {
	Limit  *int   `json:"limit,omitempty" jsonschema:"Items per page, {feed-limit-range}; any limit on any page."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The previous page's nextCursor, unchanged (it carries since: send it alone); absent or empty to start the feed."`
	Since  string `json:"since,omitempty" jsonschema:"On a first page only: the changesCursor of a last page of walk_all_records or list_changes, unchanged, to get only what changed since; absent or empty for every record."`
}

type deliveryArgs struct {
	restaurantArgs
	DeliveryID string `json:"deliveryId" jsonschema:"The delivery's id, as list_deliveries returns it."`
}

type walkArgs struct {
	restaurantArgs
	Collection string `json:"collection" jsonschema:"The collection to walk, as list_collections returns it."`
	Limit      *int   `json:"limit,omitempty" jsonschema:"Records per page, {limit-range}. Keep it unchanged for a whole walk."`
	Cursor     string `json:"cursor,omitempty" jsonschema:"The previous page's nextCursor, unchanged; or the changesCursor of an earlier walk's last page, to walk only what changed since; absent or empty for a new full walk."`
}

type recordArgs struct {
	restaurantArgs
	Collection string `json:"collection" jsonschema:"The record's collection, as list_collections returns it."`
	RecordID   string `json:"recordId" jsonschema:"The record's id (the id of an item of walk_records)."`
}

type describeArgs struct {
	Collection string `json:"collection" jsonschema:"The collection whose data schema to give, as records carry it in collection and list_collections returns it."`
}

// describeCollection is the route of describe_collection, the one tool
// that is not the face of a REST route: what it answers is in the OpenAPI
// document (GET /v1/openapi.json), whose components give each collection's
// data from the same schema files.
const describeCollection = "describeCollection"

// mcpTool is one tool: its definition, and the route whose operation and
// access rule it shares.
type mcpTool struct {
	name, title string
	// route is the operation id of the REST route this tool is a face of.
	route       string
	group       toolGroup
	args        reflect.Type
	description string

	// maxLimit is the largest limit the tool takes (0: wire.MaxLimit).
	maxLimit int

	tool *mcp.Tool
	op   operation
	need *need
	// argKinds are the arguments by JSON name; required ones have no
	// omitempty.
	argKinds map[string]reflect.Kind
	required []string
}

// paging is said by every tool that returns pages.
const paging = "Results come in pages: when nextCursor is not null, call again with every argument unchanged and " +
	"cursor set to nextCursor; stop when nextCursor is null (a page may hold fewer than limit: large items end it early). "

// mcpToolTable lists the tools (tools/list sorts them by name).
func mcpToolTable() []mcpTool {
	return []mcpTool{
		{name: "list_restaurants", title: "Restaurants this key reaches", route: "listRestaurants", args: reflect.TypeFor[noArgs](),
			description: "Lists the restaurants this API key may read and the scopes it holds on each. Start here: every " +
				"other tool takes a restaurantId from this list. A restaurant absent from it does not exist for this key. The list " +
				"is complete (no pages). " + emptyCaveat},
		{name: "list_collections", title: "Readable collections of a restaurant", route: "listCollections", group: groupRecords,
			args: reflect.TypeFor[restaurantArgs](),
			description: "Lists the record collections this key may read at a restaurant (of the 24: temperature-records, " +
				"cleaning-task-records, cooling, traceability-labels...), with what each holds. The list is complete " +
				"(no pages) and may be empty. " + emptyCaveat},
		{name: "walk_records", title: "Walk a collection", route: "walkRecords", group: groupRecords, args: reflect.TypeFor[walkArgs](),
			description: "One page of a snapshot walk of a collection: the current state of its records, by sequence " +
				"ascending (oldest change first), tombstones (deleted: true) included. The first page pins the walk; later " +
				"pages answer as of that moment, so a walk sees each record once. " + paging + "The walk's cursors expire (24 " +
				"hours after its first page by default; then start a new walk) and are the REST API's own: a cursor from GET .../records works here with the same limit, and back. " +
				"The last page (nextCursor null) carries changesCursor instead: keep it, and a later walk started with it returns only the " +
				"records created, changed or deleted since, whatever the limit; it never expires. " +
				"Filtering (dates, out-of-range values) is up to the caller: read the pages and look at data. " + emptyCaveat},
		{name: "get_record", title: "One record", route: "getRecord", group: groupRecords, args: reflect.TypeFor[recordArgs](),
			description: "The current state of one record of a collection; a deleted record answers its tombstone " +
				"(deleted: true, no data), the only proof of a deletion. One record, no pages. " + emptyCaveat},
		{name: "describe_collection", title: "The shape of a collection's data", route: describeCollection, group: groupRecords,
			args: reflect.TypeFor[describeArgs](),
			description: "The JSON Schema (draft 2020-12) of the data of a collection's records: every member, its type, " +
				"bounds and meaning, self-contained. The records walk_records, get_record and walk_all_records return name " +
				"their collection in collection, and their data follows the schema this tool gives for it (a tombstone has " +
				"no data). Call it once per collection before reading data closely: it is the same for every restaurant and " +
				"key, and is the schema the service validates every record with. One schema, no pages."},
		{name: "list_assets", title: "Files of a record", route: "listRecordAssets", group: groupFiles, args: reflect.TypeFor[recordArgs](),
			description: "The verified file of a record of cleaning-task-pictures, traceability-labels or drive-files, with a " +
				"signed download URL valid " + urlLifetimeText + " (no header needed). The list is complete (no pages); it is empty for a " +
				"pending upload, a deleted record or a collection without files. " + emptyCaveat},
		{name: "list_deliveries", title: "Deliveries in a time window", route: "listDeliveries", group: groupDeliveries,
			args: reflect.TypeFor[deliveriesArgs](),
			description: "Goods-in delivery checks whose occurredAt lies in [from, to] (both inclusive, at most " + maxSpanText + " " +
				"apart), newest first: supplier, compliance, temperatures measured, non-compliance reasons and corrective " +
				"actions. " + paging + "Devices upload late: a window that ends now may fill in later. " + emptyCaveat},
		{name: "list_changes", title: "What changed", route: "listChanges", args: reflect.TypeFor[changesArgs](),
			description: "Which of the streams this key reads (each readable collection of each restaurant, and the deliveries) " +
				"changed since a cursor, each with its head (its position now). Without a cursor: every readable stream that " +
				"holds anything. " + paging + "The last page carries changesCursor: keep it, and call again later with it to " +
				"learn in one call what changed since (an empty list when nothing did). A stream may come again with a head " +
				"you already saw: compare heads and read only the streams whose head moved (walk_records from that " +
				"collection's changesCursor, list_delivery_changes for deliveries). Cursors never expire. " + emptyCaveat},
		{name: "walk_all_records", title: "Every record this key reads", route: "walkAllRecords", args: reflect.TypeFor[feedArgs](),
			maxLimit: wire.MaxFeedLimit,
			description: "The records of every collection this key reads at every restaurant, and the deliveries where it " +
				"reads them, many streams per call: stream after stream (restaurantId, then stream), each collection's " +
				"records as walk_records returns them (tombstones included), each restaurant's deliveries as " +
				"list_delivery_changes does. Each item says its restaurantId and stream. " + paging + "Except since: " +
				"page with cursor alone (nextCursor carries since; the two together are refused). streams lists each " +
				"stream once, when its last item has come, with its changesCursor: walk_records (or list_delivery_changes) " +
				"from it later returns only what changed since. The last page carries changesCursor: call again later " +
				"with since set to it for only what changed since, many streams per call (or list_changes with it). nextCursor expires (24 hours after the feed " +
				"started its current stream by default; then start again). For one restaurant or collection, walk_records " +
				"is the tool. " + emptyCaveat},
		{name: "list_delivery_changes", title: "Deliveries as received", route: "listDeliveryChanges", group: groupDeliveries,
			args: reflect.TypeFor[deliveryChangesArgs](),
			description: "A restaurant's deliveries in the order the service received them, whatever their occurredAt, so a " +
				"check uploaded days late is never missed. " + paging + "The last page carries changesCursor: call again " +
				"later with it to get only the deliveries received since. Cursors never expire. " + emptyCaveat},
		{name: "get_delivery", title: "One delivery", route: "getDelivery", group: groupDeliveries, args: reflect.TypeFor[deliveryArgs](),
			description: "One delivery check by id. An unknown delivery and a restaurant this key cannot read are the same " +
				"error. One delivery, no pages. " + emptyCaveat},
		{name: "list_delivery_images", title: "Photographs of a delivery", route: "listDeliveryImages", group: groupImages,
			args: reflect.TypeFor[deliveryArgs](),
			description: "The photographs taken during a delivery check, by image id, each with a signed download URL " +
				"valid " + urlLifetimeText + " (no header needed). Needs both deliveries:read and delivery-images:read on the " +
				"restaurant. The list is complete (no pages). " + emptyCaveat},
	}
}

// localTools are the operations of the tools that are no route's face,
// by the name the tool table gives as their route.
func (a *API) localTools() map[string]operation {
	return map[string]operation{describeCollection: op(a.collectionDescribe)}
}

// buildTools completes the tool table from the route table (and the
// operations of localTools); a route or schema that does not fit stops
// the start-up.
func buildTools(routes []route, local map[string]operation) ([]mcpTool, error) {
	byID := map[string]route{}
	for _, r := range routes {
		byID[r.Doc.ID] = r
	}
	tools := mcpToolTable()
	for i := range tools {
		t := &tools[i]
		r, ok := byID[t.route]
		if l, isLocal := local[t.route]; isLocal && !ok {
			r = route{Op: l, Access: accessPartner}
			ok = true
		}
		if !ok || r.Op.run == nil || r.Access != accessPartner {
			return nil, fmt.Errorf("mcp tool %s: route %q is not a partner read", t.name, t.route)
		}
		t.op, t.need = r.Op, r.Need
		if err := t.define(); err != nil {
			return nil, fmt.Errorf("mcp tool %s: %w", t.name, err)
		}
	}
	return tools, nil
}

// define generates the tool's schemas from its argument and output types.
func (t *mcpTool) define() error {
	in, err := inputSchema(t.args, cmp.Or(t.maxLimit, wire.MaxLimit))
	if err != nil {
		return err
	}
	out, err := outputSchema(t.op.out)
	if err != nil {
		return err
	}
	t.required = in.Required
	t.argKinds = map[string]reflect.Kind{}
	for _, f := range reflect.VisibleFields(t.args) {
		if f.Anonymous {
			continue // its fields are visible too
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		k := f.Type.Kind()
		if k == reflect.Pointer {
			k = f.Type.Elem().Kind()
		}
		t.argKinds[name] = k
	}
	t.tool = &mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: true, IdempotentHint: true,
			DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)}}
	return nil
}

// schemaTypes are the wire types whose JSON is not what their Go kind says.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[wire.Millis]():     {Type: "string", Pattern: wire.TimestampPattern},
	reflect.TypeFor[wire.Sequence]():   {Type: "string", Pattern: wire.TimestampPattern},
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
	reflect.TypeFor[json.Number]():     {Type: "number"},
}

// inputSchema is the schema of a tool's arguments, with the bounds and
// patterns REST's parameters have and the numbers of its descriptions
// filled in (expandProse).
func inputSchema(t reflect.Type, maxLimit int) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		return nil, err
	}
	nonNullable(s, true)
	collections := collectionNames()
	for name, p := range s.Properties {
		switch name {
		case "limit":
			p.Minimum, p.Maximum = jsonschema.Ptr(float64(wire.MinLimit)), jsonschema.Ptr(float64(maxLimit))
			p.Default = json.RawMessage(fmt.Sprint(mcpDefaultLimit))
		case "from", "to":
			p.Pattern = wire.TimestampPattern
		case "collection":
			p.Enum = collections
		case "restaurantId", "deliveryId", "recordId":
			p.Pattern = ids.Pattern
		case "cursor", "since":
			p.Pattern = `^[A-Za-z0-9_-]*$`
		}
	}
	expandProse(s)
	return s, nil
}

// outputSchema is the schema of the wire struct a tool sends, its
// records typed (recordSchemas).
func outputSchema(t reflect.Type) (*jsonschema.Schema, error) {
	typed, err := recordSchemas()
	if err != nil {
		return nil, err
	}
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: typed})
	if err != nil {
		return nil, err
	}
	expandProse(s)
	return nonNullable(s, false), nil
}

// recordSchemas are schemaTypes with the records typed as the OpenAPI
// document types them, within what a tool list can carry: a record's
// collection is an enum of the 24 names, the member that says which
// schema its data follows, and a feed item's stream is one of those or
// deliveries, with the record or the delivery it carries (and
// describe_collection's answer names one of the 24 too). The 24 data
// schemas themselves are not inlined (they would multiply tools/list by
// three for every conversation); describe_collection gives each one.
var recordSchemas = sync.OnceValues(func() (map[reflect.Type]*jsonschema.Schema, error) {
	names := collectionNames()
	types := maps.Clone(schemaTypes)
	env, err := jsonschema.ForType(reflect.TypeFor[wire.Envelope](), &jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, err
	}
	env.Properties["collection"].Enum = names
	types[reflect.TypeFor[wire.Envelope]()] = env
	item, err := jsonschema.ForType(reflect.TypeFor[wire.RecordFeedItem](), &jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, err
	}
	item.Properties["stream"].Enum = append(slices.Clone(names), catalog.DeliveryStream)
	deliveries := jsonschema.Schema{Const: jsonschema.Ptr[any](catalog.DeliveryStream)}
	item.OneOf = []*jsonschema.Schema{
		{Properties: map[string]*jsonschema.Schema{"stream": &deliveries}, Required: []string{"delivery"}},
		{Properties: map[string]*jsonschema.Schema{"stream": {Not: &deliveries}}, Required: []string{"record"}},
	}
	types[reflect.TypeFor[wire.RecordFeedItem]()] = item
	described, err := jsonschema.ForType(reflect.TypeFor[wire.CollectionSchema](), &jsonschema.ForOptions{TypeSchemas: types})
	if err != nil {
		return nil, err
	}
	described.Properties["collection"].Enum = names
	types[reflect.TypeFor[wire.CollectionSchema]()] = described
	return types, nil
})

// collectionNames are the 24 collections' names, for an enum.
func collectionNames() []any {
	out := make([]any, len(catalog.Collections))
	for i, c := range catalog.Collections {
		out[i] = c.Name
	}
	return out
}

// collectionDescribe is describe_collection: a collection's data schema,
// bundled from the file the service validates with. An unknown collection
// is said with the 24 names, never echoing what was sent.
func (a *API) collectionDescribe(_ context.Context, r request) (wire.CollectionSchema, error) {
	col, ok := catalog.Lookup(r.params.path("collection"))
	if !ok {
		names := make([]string, len(catalog.Collections))
		for i, c := range catalog.Collections {
			names[i] = c.Name
		}
		return wire.CollectionSchema{}, apperr.Param("collection", "is not one of the 24 collections: %s", strings.Join(names, ", "))
	}
	schema, err := a.schemas.Bundle(col.Name + ".data")
	if err != nil {
		return wire.CollectionSchema{}, err
	}
	return wire.CollectionSchema{Collection: col.Name, Description: col.Description, ReadScope: col.ReadScope(),
		CarriesFiles: col.CarriesFiles, DataSchema: schema}, nil
}

// nonNullable removes "null" from array types, which the wire never sends
// (lists are [] when empty), and with pointers also from every other type:
// an optional argument is absent, not null. Pointer fields of outputs are
// null when there is none (nextCursor, commentary); their type becomes an
// anyOf of null and the type, which clients that map schemas onto a
// single-type dialect (Gemini's function declarations) accept.
func nonNullable(s *jsonschema.Schema, pointers bool) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		other := s.Types[0]
		if other == "null" {
			other = s.Types[1]
		}
		switch {
		case pointers || other == "array":
			s.Type, s.Types = other, nil
		default:
			s.AnyOf = []*jsonschema.Schema{{Type: "null"}, {Type: other, Pattern: s.Pattern}}
			s.Types, s.Pattern = nil, ""
		}
	}
	for _, p := range s.Properties {
		nonNullable(p, pointers)
	}
	nonNullable(s.Items, pointers)
	return s
}

// decodeArgs reads a tool call's arguments as the operation's parameters:
// strings as given, integers as the digits a REST client would have sent
// (timestamps given as JSON integers included, see timestampArgs).
// It refuses what REST cannot receive (unknown arguments, wrong JSON
// types, missing required ones) with the same kind of message; everything
// else is the operation's to judge.
func decodeArgs(t *mcpTool, raw json.RawMessage) (argParams, error) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, apperr.New(apperr.Invalid, "The arguments must be a JSON object.")
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	out := argParams{}
	for _, name := range names {
		kind, known := t.argKinds[name]
		if !known {
			return nil, apperr.Param(storableText(name, 100), "is not an argument of %s; it takes %s", t.name, t.argList())
		}
		v := bytes.TrimSpace(fields[name])
		if string(v) == "null" {
			continue // absent
		}
		switch kind {
		case reflect.String:
			var s string
			if err := json.Unmarshal(v, &s); err == nil {
				out[name] = s
				break
			}
			if timestampArgs[name] && digits(v) {
				// MCP clients and models send timestamps as JSON numbers:
				// the same digits are the same instant.
				out[name] = string(v)
				break
			}
			if timestampArgs[name] {
				return nil, apperr.Param(name, "must be epoch milliseconds: a string of digits (an integer of the same digits is accepted too)")
			}
			return nil, apperr.Param(name, "must be a string")
		case reflect.Int:
			if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				return nil, apperr.Param(name, "must be an integer")
			}
			out[name] = string(v) // a JSON number: "0", "101", "2.5"; parseLimit says what is wrong
		default:
			return nil, fmt.Errorf("mcp tool %s: argument %s of kind %s", t.name, name, kind)
		}
	}
	for _, name := range t.required {
		if _, ok := out[name]; !ok {
			return nil, apperr.Param(name, "is required")
		}
	}
	return out, nil
}

// timestampArgs are the arguments holding epoch milliseconds: strings of
// digits in the schema and on REST, accepted as JSON integers too.
var timestampArgs = map[string]bool{"from": true, "to": true}

// digits reports a JSON number token written as digits only (an integer
// without sign, fraction or exponent).
func digits(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (t *mcpTool) argList() string {
	if len(t.argKinds) == 0 {
		return "no arguments"
	}
	names := make([]string, 0, len(t.argKinds))
	for n := range t.argKinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// argParams are a tool call's arguments as operation parameters. An empty
// cursor or since is none: models often send "" for "first page" (or
// "from the beginning"); any other value is the operation's to judge.
type argParams map[string]string

func (p argParams) path(name string) string { return p[name] }

func (p argParams) query(name string) (string, bool, error) {
	v, ok := p[name]
	if (name == "cursor" || name == "since") && v == "" {
		ok = false
	}
	return v, ok, nil
}

// toolHandler is a tool's MCP handler: decode, the route's access check,
// the route's operation. Every failure is a tool result with isError and
// the detail REST's problem document would carry; a panic is one too,
// logged with its stack.
func (a *API) toolHandler(t mcpTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		call := callFrom(ctx)
		if call == nil {
			return nil, errors.New("mcp tool called outside POST /mcp")
		}
		ctx, sp := span.Start(ctx, "tools/call "+t.name)
		defer func() {
			if rec := recover(); rec != nil {
				a.logPanic(ctx, call, "tools/call "+t.name, rec)
				res = toolFailure(internalDetail + " (requestId " + call.requestID + ")")
			}
			traceTool(sp, t.name, res)
		}()
		out, err := a.runTool(ctx, call, &t, req.Params.Arguments)
		if err == nil {
			err = a.holdAnswer(ctx, call, out)
		}
		if err != nil {
			call.mu.Lock()
			call.toolError = true
			call.mu.Unlock()
			return toolFailure(a.toolErrorText(ctx, call, t.name, err)), nil
		}
		return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: renderText(t.name, out)}}}, nil
	}
}

func (a *API) runTool(ctx context.Context, call *mcpCall, t *mcpTool, raw json.RawMessage) (any, error) {
	args, err := decodeArgs(t, raw)
	if err != nil {
		return nil, err
	}
	if r, ok := args["restaurantId"]; ok {
		call.mu.Lock()
		call.restaurant = storableText(r, 200)
		call.mu.Unlock()
	}
	if t.need != nil {
		if err := allow(call.principal, args, t.need); err != nil {
			return nil, err
		}
	}
	return t.op.run(ctx, request{principal: call.principal, params: args, baseURL: call.baseURL, defaultLimit: mcpDefaultLimit})
}

// toolErrorText is what a tool says about a failure: the detail of the
// problem document REST would answer. Internal failures are logged with
// the request id and said no more about, as in problemFor.
func (a *API) toolErrorText(ctx context.Context, call *mcpCall, tool string, err error) string {
	kind, detail, _ := a.classify(ctx, call.requestID, mcpPath+" "+tool, err)
	if kind.Status >= 500 {
		return detail + " (requestId " + call.requestID + ")"
	}
	return detail
}

func toolFailure(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
