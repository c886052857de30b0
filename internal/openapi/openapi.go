// Package openapi builds the service's OpenAPI 3.1 document at start-up
// from the route table that registers the handlers (internal/httpapi) and
// from the JSON Schemas in schemas/, with github.com/getkin/kin-openapi.
// Nothing in it is written by hand per endpoint beyond what the route table
// says, so the document cannot drift from the code; the contract tests hold
// every response of the test suite to it.
package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Auth says how an operation authenticates.
type Auth int

// Authentication kinds.
const (
	AuthNone Auth = iota
	AuthBearer
)

// Limit says which rate-limit budget an operation counts against.
type Limit int

// Rate-limit kinds.
const (
	LimitNone Limit = iota
	LimitKey
	LimitIP
)

// Body describes a request body.
type Body struct {
	// Schema is a component schema name; empty with Binary.
	Schema string
	// Binary bodies are raw bytes (file uploads): of the media types in
	// Media, or of any type when Media is empty.
	Binary   bool
	Media    []string
	Optional bool
	// Example names a component example; of a binary body, it is the
	// example of the first of Media (or of */*): text only, as the
	// document cannot carry other bytes.
	Example string
	// MoreExamples name further component examples of a JSON body.
	MoreExamples []string
}

// Response describes the success response.
type Response struct {
	// Status defaults to 200.
	Status int
	// Schema is a component schema name for JSON bodies.
	Schema string
	// Media is the content type when not JSON ("*/*" for files,
	// "text/html" for pages); empty Media and Schema: no body.
	Media string
	// Replayable responses may carry Idempotent-Replayed.
	Replayable bool
	// Headers are extra response header components.
	Headers []string
	// Example names a component example.
	Example string
	// Links are the operations a client follows from this answer.
	Links []Link
}

// Op is one documented operation, taken from the route table.
type Op struct {
	Method, Path string // Path in gin syntax (:param)
	ID           string
	Summary      string
	Description  string
	Tag          string
	Auth         Auth
	Limit        Limit
	// UnderRestaurant operations answer 404 for ungranted restaurants and
	// 403 for missing scopes.
	UnderRestaurant bool
	// Scopes, for the description.
	Scopes []string
	// ParamExamples are this operation's examples of parameters, by
	// component name, where they differ from the component's (a
	// parameter then is written out, with its example).
	ParamExamples map[string]any
	// PathParams names the component of a path parameter whose component
	// is not named after it (an upload's collection is one of the three
	// collections with files: fileCollection).
	PathParams map[string]string
	// Query and Headers name parameter components.
	Query   []string
	Headers []string
	Body    *Body
	OK      Response
	// Extra lists further success statuses (e.g. 206, 304) with the same
	// shape as OK.
	Extra []int
	// Errors lists statuses beyond those every operation of its kind has.
	Errors []int
	// Alt lists answers beside the success response and the problems.
	Alt []Alt
	// PerCollection, when set, documents the operation once more per
	// collection, typed for it.
	PerCollection *PerCollection
}

// PerCollection types an operation under {collection} once per collection:
// the same route at a path naming the collection, whose body is the
// collection's member of a schema family, so that a generated client
// checks a body's data against the collection's schema. The generic
// operation stays.
type PerCollection struct {
	// ID is the typed operation's id, %s the collection's PascalCase name.
	ID string
	// Body is the family member suffix of the body ("Snapshot":
	// AreasSnapshot), and of its component example.
	Body string
	// ParamExamples are a collection's examples of parameters (see
	// Op.ParamExamples), consistent with its body's example.
	ParamExamples func(collection string) map[string]any
}

// Alt is a further answer of an operation: another success status, or a
// body of another media type under a status that may also be a problem
// (MCP answers JSON-RPC errors with 400 and 404).
type Alt struct {
	Status      int
	Description string
	// Schema is a component schema of an application/json body; empty for
	// an answer without a body.
	Schema string
}

var pathParam = regexp.MustCompile(`:([A-Za-z0-9]+)`)

// OpenAPIPath turns a gin route path into an OpenAPI path template.
func OpenAPIPath(ginPath string) string {
	return pathParam.ReplaceAllString(ginPath, "{$1}")
}

// Info is the document's identity.
type Info struct {
	Version string // service version, reported in x-service-version
	Server  string // servers[0].url: the public base URL, or "/"
}

// ServerURL is the document's server for a configured base URL: the base
// URL itself, or "/" (the document's own origin) when none is configured.
func ServerURL(baseURL string) string {
	if baseURL == "" {
		return "/"
	}
	return baseURL
}

// Build assembles and validates the document. schemas maps schema file
// names (without .json) to their documents.
func Build(ops []Op, schemas map[string]map[string]any, info Info) (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{
			Title:   "foodsafe partner API",
			Version: "1",
			Description: "Food-safety records of restaurants for partners (deliveries and 24 record collections), " +
				"the mobile app's snapshot ingest and file uploads. Every timestamp is epoch milliseconds as a string of " +
				"digits. Every failure is an application/problem+json document. Every GET operation also answers HEAD " +
				"(same status and headers, no body). Beyond the responses listed per operation, a method a path does not " +
				"have answers 405 method-not-allowed with an Allow header, and an unsupported transfer coding 501 not-implemented. " +
				"No string and no member name of a JSON body may hold the NUL character (U+0000), which PostgreSQL cannot store: " +
				"such a body is a 400 naming each place (the free-text schemas say it with a pattern). " +
				"This document is generated from the " +
				"running service and is authoritative.",
			Extensions: map[string]any{"x-service-version": info.Version},
			Contact:    &openapi3.Contact{Name: "foodsafe partner support", Email: "partners@foodsafe.example"},
			License:    &openapi3.License{Name: "Proprietary", URL: "https://foodsafe.example/terms"},
		},
		Servers:    openapi3.Servers{{URL: info.Server, Description: "This deployment"}},
		Paths:      openapi3.NewPaths(),
		Components: &openapi3.Components{},
		Tags:       tags(),
	}
	if err := addSchemas(doc, schemas); err != nil {
		return nil, err
	}
	if err := addFamilies(doc.Components.Schemas); err != nil {
		return nil, err
	}
	scopeNames(doc.Components.Schemas)
	doc.Components.SecuritySchemes = openapi3.SecuritySchemes{
		"bearerAuth": {Value: &openapi3.SecurityScheme{Type: "http", Scheme: "bearer",
			Description: "A partner or device key `fsk_<public>.<secret>`, or a mobile session token `fst_<public>.<secret>`."}},
	}
	problemTypes(doc)
	doc.Components.Parameters = withParamExamples(parameters())
	doc.Components.Headers = headers()
	doc.Components.Responses = problemResponses()
	doc.Components.Examples = componentExamples()

	for _, op := range withPerCollection(ops) {
		if err := addOp(doc, op); err != nil {
			return nil, fmt.Errorf("%s %s: %w", op.Method, op.Path, err)
		}
	}
	pruneProblemResponses(doc)
	// Components were assembled from JSON; let the loader link every $ref.
	if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
		return nil, fmt.Errorf("openapi references: %w", err)
	}
	// Examples are not validated here, at every start: that compiles a
	// validator per example per operation that references it, most of the
	// build's time. The tests validate the served document whole
	// (TestOpenAPIDocumentServed), send every example request
	// (TestOpenAPIExamplesSucceedOnDemoData), and the linters check every
	// example against its schema (make lint-openapi).
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	return doc, nil
}

func tags() openapi3.Tags {
	return openapi3.Tags{
		{Name: "Health", Description: "Liveness, readiness and version; no authentication."},
		{Name: "Restaurants", Description: "The restaurants a key reaches."},
		{Name: "Deliveries", Description: "Goods-in deliveries by time window, and their photographs."},
		{Name: "Collections", Description: "The 24 record collections: full walks over a change stream with tombstones."},
		{Name: "Files", Description: "Verified uploads and their signed downloads."},
		{Name: "Ingest", Description: "Write paths of the mobile app and the provider."},
		{Name: "Sessions", Description: "Mobile session exchange."},
		{Name: "Documentation", Description: "This document and its rendering."},
		{Name: "MCP", Description: "The Model Context Protocol endpoint: the same data, keys and rules for AI clients."},
	}
}

// componentName names the component of a schema file.
func componentName(file string) string {
	switch file {
	case "delivery":
		return "Delivery"
	case "ingest":
		return "IngestSnapshot"
	case "session-request":
		return "SessionRequest"
	}
	if c, ok := strings.CutSuffix(file, ".data"); ok {
		return pascal(c) + "Data"
	}
	return pascal(file)
}

// pascal turns "idOrNull" or "cleaning-task-pictures" into "IdOrNull" or
// "CleaningTaskPictures".
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '-' || r == '.' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// addSchemas turns every schema file into components: whole files by name,
// and the $defs of defs.json and responses.json as components of their
// own, with references rewritten to #/components/schemas/.
func addSchemas(doc *openapi3.T, files map[string]map[string]any) error {
	out := map[string]any{}
	for file, s := range files {
		s = rewriteRefs(file, deepCopy(s)).(map[string]any)
		defs, _ := s["$defs"].(map[string]any)
		delete(s, "$defs")
		delete(s, "$schema")
		delete(s, "$id")
		for name, d := range defs {
			if file == "defs" {
				name = pascal(name)
			}
			out[name] = d
		}
		if file != "defs" && file != "responses" {
			out[componentName(file)] = s
		}
	}
	numberFormats(out)
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	var comps openapi3.Schemas
	if err := json.Unmarshal(b, &comps); err != nil {
		return fmt.Errorf("schemas: %w", err)
	}
	doc.Components.Schemas = comps
	return nil
}

// numberFormats gives every number and integer schema under v a format,
// where the schema files leave it out (JSON Schema validation needs none):
// generators read `type: number` without one as a 32-bit float, which
// loses digits (5.6 becomes 5.599999904632568) and fails to decode large
// values the service accepts. Numbers are doubles; integers are int32 when
// their bounds fit, int64 otherwise.
func numberFormats(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["format"]; !ok {
			switch {
			case hasType(v["type"], "number"):
				v["format"] = "double"
			case hasType(v["type"], "integer"):
				v["format"] = "int64"
				lo, okLo := v["minimum"].(float64)
				hi, okHi := v["maximum"].(float64)
				if okLo && okHi && lo >= math.MinInt32 && hi <= math.MaxInt32 {
					v["format"] = "int32"
				}
			}
		}
		for _, c := range v {
			numberFormats(c)
		}
	case []any:
		for _, c := range v {
			numberFormats(c)
		}
	}
}

// hasType reports whether a JSON Schema "type" (a name or a list) names t.
func hasType(types any, t string) bool {
	switch types := types.(type) {
	case string:
		return types == t
	case []any:
		for _, x := range types {
			if x == t {
				return true
			}
		}
	}
	return false
}

func rewriteRefs(file string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if k == "$ref" {
				if s, ok := c.(string); ok {
					t[k] = "#/components/schemas/" + refTarget(file, s)
				}
				continue
			}
			t[k] = rewriteRefs(file, c)
		}
	case []any:
		for i, c := range t {
			t[i] = rewriteRefs(file, c)
		}
	}
	return v
}

// refTarget names the component a schema reference points to.
func refTarget(file, ref string) string {
	doc, frag, _ := strings.Cut(ref, "#")
	name := strings.TrimPrefix(frag, "/$defs/")
	switch {
	case doc == "" && file == "defs", doc == "defs.json":
		return pascal(name)
	case doc == "":
		return name
	default:
		return componentName(strings.TrimSuffix(doc, ".json"))
	}
}

func deepCopy(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

const (
	idPattern        = ids.Pattern
	timestampPattern = wire.TimestampPattern
)

func stringSchema(pattern, desc string) *openapi3.SchemaRef {
	return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Pattern: pattern, Description: desc}}
}

func param(in, name string, required bool, desc string, s *openapi3.SchemaRef) *openapi3.ParameterRef {
	return &openapi3.ParameterRef{Value: &openapi3.Parameter{In: in, Name: name, Required: required, Description: desc, Schema: s}}
}

func parameters() openapi3.ParametersMap {
	id := func(desc string) *openapi3.SchemaRef { return stringSchema(idPattern, desc) }
	names := make([]any, len(catalog.Collections))
	for i, c := range catalog.Collections {
		names[i] = c.Name
	}
	limit := openapi3.NewInt32Schema().WithMin(wire.MinLimit).WithMax(wire.MaxLimit)
	limit.Default = wire.DefaultLimit
	limit.Description = fmt.Sprintf("Page size, %d to %d, written in plain digits.", wire.MinLimit, wire.MaxLimit)
	feedLimit := openapi3.NewInt32Schema().WithMin(wire.MinLimit).WithMax(wire.MaxFeedLimit)
	feedLimit.Default = wire.DefaultFeedLimit
	feedLimit.Description = fmt.Sprintf("Items per page, %d to %d, written in plain digits.", wire.MinLimit, wire.MaxFeedLimit)
	return openapi3.ParametersMap{
		"restaurantId": param("path", "restaurantId", true, "Restaurant id.", id("Restaurant id.")),
		"deliveryId":   param("path", "deliveryId", true, "Delivery id.", id("Delivery id.")),
		"recordId":     param("path", "recordId", true, "Record id, unique within the collection.", id("Record id.")),
		"mutationId":   param("path", "mutationId", true, "Identifier of this change; also the Idempotency-Key.", id("Mutation id.")),
		"imageId":      param("path", "imageId", true, "Image id, unique within the delivery.", id("Image id.")),
		"collection": param("path", "collection", true, "One of the 24 collections; any other name is a 400.",
			&openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: names}}),
		"fileCollection": param("path", "collection", true, "One of the three collections whose records carry a file ("+
			strings.Join(FileCollections(), ", ")+"); any other name is a 400.",
			&openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: toAny(FileCollections())}}),
		"sha256":  param("path", "sha256", true, "SHA-256 of the file.", stringSchema(`^[0-9a-f]{64}$`, "64 lowercase hex characters.")),
		"docFile": param("path", "docFile", true, "A file of the documentation page.", stringSchema(`^[A-Za-z0-9._-]+$`, "File name.")),
		"code":    param("path", "code", true, "A problem type's last segment, e.g. rate-limit-exceeded.", stringSchema(`^[a-z-]+$`, "Problem type code.")),
		"from":    param("query", "from", true, "Start of the window, inclusive: epoch milliseconds as digits.", stringSchema(timestampPattern, "Epoch milliseconds.")),
		"to": param("query", "to", true, "End of the window, inclusive; to >= from and to - from at most 366 days.",
			stringSchema(timestampPattern, "Epoch milliseconds.")),
		"limit": {Value: &openapi3.Parameter{In: "query", Name: "limit",
			Description: fmt.Sprintf("Page size, %d to %d; default %d.", wire.MinLimit, wire.MaxLimit, wire.DefaultLimit), Schema: limit.NewRef()}},
		"feedLimit": {Value: &openapi3.Parameter{In: "query", Name: "limit",
			Description: fmt.Sprintf("Items per page, %d to %d; default %d.", wire.MinLimit, wire.MaxFeedLimit, wire.DefaultFeedLimit), Schema: feedLimit.NewRef()}},
		"cursor": param("query", "cursor", false, "The previous page's nextCursor, unchanged; bound to the other parameters. On a collection walk, also a last page's changesCursor (see the operation).", stringSchema(`^[A-Za-z0-9_-]+$`, "Opaque cursor.")),
		"since": param("query", "since", false, "The changesCursor of the last page of GET /v1/records or GET /v1/changes, unchanged: "+
			"read only what changed since (see the operation).", stringSchema(`^[A-Za-z0-9_-]+$`, "Opaque cursor.")),
		"objectKey": param("query", "objectKey", true, "The data.asset.objectKey of the file these bytes are, URL-encoded: the bytes are "+
			"attached to that file only, and refused (409) when the record names no file or another one by the time the upload commits.",
			&openapi3.SchemaRef{Ref: "#/components/schemas/ObjectKey"}),
		"type": param("query", "type", true, "Media type the file is served as (part of the signed URL).", stringSchema("", "Media type.")),
		"expires": param("query", "expires", true, "Expiry of the signed URL, epoch milliseconds (part of the signed URL).",
			stringSchema(timestampPattern, "Epoch milliseconds.")),
		"signature": param("query", "signature", true, "HMAC of the URL.", stringSchema(`^[0-9a-f]{64}$`, "Signature.")),
		"IfNoneMatch": param("header", "If-None-Match", false, "The ETag of the answer you hold (RFC 9110 13.1.2); while it is "+
			"still current the answer is 304 without a body.", stringSchema("", "Entity tags, comma-separated, or *.")),
		"IdempotencyKey": param("header", "Idempotency-Key", true, "Must equal the mutationId of the path and of the body.",
			id("The mutation id.")),
		"ReprDigest": param("header", "Repr-Digest", true, "SHA-256 of the body (RFC 9530): `sha-256=:<base64>:`. A mismatch stores nothing.",
			stringSchema("", "Structured-field dictionary with a sha-256 byte sequence.")),
		"uploadId": param("path", "uploadId", true, "A resumable upload: the last segment of the Location its creation answered (with the 104 "+
			"and the final answer). A name, not a credential: only the key that created it reaches it.",
			stringSchema(`^[a-z0-9]{1,64}$`, "Upload name.")),
		"UploadDraftInteropVersion": param("header", "Upload-Draft-Interop-Version", false, "6 makes an upload resumable "+
			"(draft-ietf-httpbis-resumable-upload, interop version 6, as URLSession on iOS 18.1+ sends it), with Upload-Complete; "+
			"any other value, or none, is the single PUT.", stringSchema(`^[0-9]+$`, "Interop version.")),
		"UploadComplete": param("header", "Upload-Complete", false, "With Upload-Draft-Interop-Version: 6 (required then): ?1 when "+
			"this body is the whole file, ?0 when more follows in PATCH requests. The answer 104 Upload Resumption Supported, before "+
			"the body is read, gives the upload's Location; a cut upload resumes there with HEAD and PATCH.",
			stringSchema(`^\?[01]$`, "Structured-field boolean.")),
		"UploadCompleteRequired": param("header", "Upload-Complete", true, "?1 when this body ends the file (the upload then "+
			"completes), ?0 when more follows.", stringSchema(`^\?[01]$`, "Structured-field boolean.")),
		"UploadOffset": param("header", "Upload-Offset", true, "The bytes of the file already sent: the Upload-Offset HEAD answers.",
			stringSchema(`^[0-9]+$`, "Bytes.")),
		"McpProtocolVersion": param("header", "MCP-Protocol-Version", false, "The MCP protocol revision the client negotiated; absent on initialize.",
			stringSchema("", "A revision date, e.g. 2025-11-25.")),
		"McpMethod": param("header", "Mcp-Method", false, "The JSON-RPC method of the body (required by protocol 2026-07-28).",
			stringSchema("", "JSON-RPC method.")),
		"McpName": param("header", "Mcp-Name", false, "The tool name of a tools/call (required by protocol 2026-07-28).",
			stringSchema("", "Tool name.")),
		"RequestId": param("header", "X-Request-ID", false, "Echoed in the response header and problem documents when 1 to 200 visible ASCII characters (and not holding a key or token); "+
			"any other value is accepted and replaced by a generated id.",
			stringSchema("", "Request id: 1 to 200 visible ASCII characters to be echoed.")),
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// paramRef is a reference to a parameter component, or the component
// written out with the operation's own example.
func paramRef(doc *openapi3.T, op Op, component string) *openapi3.ParameterRef {
	ex, ok := op.ParamExamples[component]
	shared := doc.Components.Parameters[component]
	if !ok || shared == nil || shared.Value == nil {
		return &openapi3.ParameterRef{Ref: "#/components/parameters/" + component}
	}
	own := *shared.Value
	own.Example = ex
	return &openapi3.ParameterRef{Value: &own}
}

func header(desc string, s *openapi3.Schema) *openapi3.HeaderRef {
	return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{Description: desc, Schema: s.NewRef()}}}
}

func headers() openapi3.Headers {
	return openapi3.Headers{
		"X-Request-ID":          header("The request id: the client's when sane, else generated.", openapi3.NewStringSchema()),
		"X-RateLimit-Limit":     header("Requests allowed per minute for this key (or client IP).", openapi3.NewInt32Schema()),
		"X-RateLimit-Remaining": header("Requests left in the current window.", openapi3.NewInt32Schema()),
		"X-RateLimit-Reset":     header("Seconds until the window resets.", openapi3.NewInt32Schema()),
		"Retry-After":           header("Whole seconds to wait before retrying.", openapi3.NewInt32Schema()),
		"Idempotent-Replayed":   header("`true` when this answers a replay of an earlier, identical write.", openapi3.NewStringSchema().WithEnum("true")),
		"Idempotent-Replayed-State": header("`compacted` on a replay of a change superseded longer ago than the change-log retention "+
			"(FOODSAFE_COMPACT_AFTER): its data is no longer kept, so the envelope carries the change's id, sequence, mutationId, "+
			"deleted and times without data. Nothing was applied; the record's current state is one GET away.",
			openapi3.NewStringSchema().WithEnum("compacted")),
		"WWW-Authenticate": header("Bearer challenge (RFC 6750).", openapi3.NewStringSchema()),
		"ETag": header("The answer's entity tag: a file's sha256, quoted; on the restaurant list, the version of the key's grants "+
			"(send it back as If-None-Match).", openapi3.NewStringSchema()),
		"Content-Range": header("Range served, or the file size on 416.", openapi3.NewStringSchema()),
		"Upload-Offset": header("Bytes of the file the resumable upload durably holds: the next PATCH's Upload-Offset.",
			openapi3.NewStringSchema().WithPattern(`^[0-9]+$`)),
		"Upload-Complete": header("?0 while the upload awaits more bytes; ?1 on the answer that completed it.", openapi3.NewStringSchema()),
		"Upload-Length":   header("The whole file's length, when declared.", openapi3.NewStringSchema().WithPattern(`^[0-9]+$`)),
		"Upload-Limit": header("The upload's limits: max-size (the largest file, FOODSAFE_MAX_ASSET_BYTES) and max-age (seconds left "+
			"of its lifetime, FOODSAFE_UPLOAD_RESUME_LIFETIME from creation).", openapi3.NewStringSchema()),
		"Cache-Control": header("no-store: an upload's offset is never cached.", openapi3.NewStringSchema()),
	}
}

// pruneProblemResponses drops the problem responses no operation lists:
// 405 (a method a path does not have) and 501 (an unknown transfer coding)
// belong to no operation; the document's description names them.
func pruneProblemResponses(doc *openapi3.T) {
	used := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, r := range op.Responses.Map() {
				used[r.Ref] = true
			}
		}
	}
	for status := range doc.Components.Responses {
		if !used["#/components/responses/"+status] {
			delete(doc.Components.Responses, status)
		}
	}
}

// problemTypes pins the Problem schema's type member to the suffixes of
// apperr.Kinds, the table the service answers from.
func problemTypes(doc *openapi3.T) {
	codes := make([]string, len(apperr.Kinds))
	for i, k := range apperr.Kinds {
		codes[i] = regexp.QuoteMeta(string(k.Code))
	}
	if p := doc.Components.Schemas["Problem"]; p != nil && p.Value != nil {
		if t := p.Value.Properties["type"]; t != nil && t.Value != nil {
			t.Value.Pattern = "/problems/(" + strings.Join(codes, "|") + ")$"
		}
	}
}

// problemResponses documents every problem kind of apperr.Kinds, the one
// table the service answers from: one response per status, naming each
// kind of that status (403: forbidden, download-url-expired) with an
// example of each.
func problemResponses() openapi3.ResponseBodies {
	out := openapi3.ResponseBodies{}
	for _, k := range apperr.Kinds {
		desc := fmt.Sprintf("Problem `%s`: %s Retry: %s", k.Code, k.When, k.Retry)
		example := &openapi3.ExampleRef{Value: &openapi3.Example{Value: map[string]any{
			"type": "https://api.foodsafe.example/problems/" + string(k.Code), "title": k.Title,
			"status": k.Status, "detail": k.When, "instance": "/v1/restaurants/bistro-42/deliveries",
			"requestId": "5JXHPLQUWBQ7F2ZK3VZQ4T2M6A"}}}
		if prev := out[strconv.Itoa(k.Status)]; prev != nil {
			*prev.Value.Description += " Or problem `" + string(k.Code) + "`: " + k.When + " Retry: " + k.Retry
			prev.Value.Content["application/problem+json"].Examples[string(k.Code)] = example
			continue
		}
		r := &openapi3.Response{Description: &desc, Headers: openapi3.Headers{"X-Request-ID": {Ref: "#/components/headers/X-Request-ID"}}}
		r.Content = openapi3.Content{"application/problem+json": &openapi3.MediaType{
			Schema:   &openapi3.SchemaRef{Ref: "#/components/schemas/Problem"},
			Examples: openapi3.Examples{string(k.Code): example},
		}}
		switch k.Status {
		case 401:
			r.Headers["WWW-Authenticate"] = &openapi3.HeaderRef{Ref: "#/components/headers/WWW-Authenticate"}
		case 429:
			r.Headers["Retry-After"] = &openapi3.HeaderRef{Ref: "#/components/headers/Retry-After"}
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
				r.Headers[h] = &openapi3.HeaderRef{Ref: "#/components/headers/" + h}
			}
		case 503:
			r.Headers["Retry-After"] = &openapi3.HeaderRef{Ref: "#/components/headers/Retry-After"}
		case 416:
			r.Headers["Content-Range"] = &openapi3.HeaderRef{Ref: "#/components/headers/Content-Range"}
		}
		out[strconv.Itoa(k.Status)] = &openapi3.ResponseRef{Value: r}
	}
	return out
}

// errorStatuses are the failures an operation can answer.
func errorStatuses(op Op) []int {
	// Malformed query strings; oversized header sections (answered before
	// routing); unexpected failures.
	set := map[int]bool{400: true, 431: true, 500: true}
	switch op.Limit {
	case LimitKey, LimitIP:
		set[429] = true
	}
	if op.Auth == AuthBearer {
		set[401], set[503] = true, true
	}
	if op.UnderRestaurant {
		set[404] = true
		if len(op.Scopes) > 0 {
			set[403] = true
		}
	}
	for _, s := range op.Errors {
		set[s] = true
	}
	out := make([]int, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func addOp(doc *openapi3.T, op Op) error {
	path := OpenAPIPath(op.Path)
	item := doc.Paths.Value(path)
	if item == nil {
		item = &openapi3.PathItem{}
		doc.Paths.Set(path, item)
	}
	o := &openapi3.Operation{OperationID: op.ID, Summary: op.Summary, Tags: []string{op.Tag}, Responses: openapi3.NewResponses()}
	o.Description = op.Description
	if len(op.Scopes) > 0 {
		// Code spans: descriptions are Markdown, where a bare
		// <collection> is an HTML tag and vanishes from rendered docs.
		o.Description += "\n\nScopes: `" + strings.Join(op.Scopes, "` and `") + "` on the restaurant."
	}
	if op.Auth == AuthBearer {
		o.Security = &openapi3.SecurityRequirements{{"bearerAuth": []string{}}}
	} else {
		o.Security = &openapi3.SecurityRequirements{}
	}
	for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
		name := m[1]
		if c, ok := op.PathParams[name]; ok {
			name = c
		}
		o.Parameters = append(o.Parameters, paramRef(doc, op, name))
	}
	for _, q := range append(append([]string{}, op.Query...), op.Headers...) {
		o.Parameters = append(o.Parameters, paramRef(doc, op, q))
	}
	o.Parameters = append(o.Parameters, &openapi3.ParameterRef{Ref: "#/components/parameters/RequestId"})
	if b := op.Body; b != nil {
		rb := &openapi3.RequestBody{Required: !b.Optional}
		if b.Binary {
			rb.Description = "The file's bytes; Content-Type is its media type (1 to 100 characters)."
			media := b.Media
			if len(media) == 0 {
				media = []string{"*/*"}
			} else {
				rb.Description = "The photograph's bytes; Content-Type is its media type, one of " + strings.Join(media, ", ") + "."
			}
			rb.Content = openapi3.Content{}
			for _, m := range media {
				rb.Content[m] = &openapi3.MediaType{Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{}}}
			}
			if b.Example != "" {
				rb.Content[media[0]].Examples = openapi3.Examples{b.Example: {Ref: "#/components/examples/" + b.Example}}
			}
		} else {
			mt := &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: "#/components/schemas/" + b.Schema}}
			if b.Example != "" {
				mt.Examples = openapi3.Examples{}
				for _, e := range append([]string{b.Example}, b.MoreExamples...) {
					mt.Examples[e] = &openapi3.ExampleRef{Ref: "#/components/examples/" + e}
				}
			}
			rb.Content = openapi3.Content{"application/json": mt}
		}
		o.RequestBody = &openapi3.RequestBodyRef{Value: rb}
	}
	ok := successResponse(op)
	status := op.OK.Status
	if status == 0 {
		status = http.StatusOK
	}
	o.Responses.Set(strconv.Itoa(status), &openapi3.ResponseRef{Value: ok})
	for _, s := range op.Extra {
		r := successResponse(op)
		desc := http.StatusText(s)
		r.Description = &desc
		if s == http.StatusNotModified {
			// No body: nothing to follow either.
			r.Content, r.Links = nil, nil
		}
		o.Responses.Set(strconv.Itoa(s), &openapi3.ResponseRef{Value: r})
	}
	for _, s := range errorStatuses(op) {
		o.Responses.Set(strconv.Itoa(s), &openapi3.ResponseRef{Ref: "#/components/responses/" + strconv.Itoa(s)})
	}
	for _, alt := range op.Alt {
		addAlt(doc, o, op, alt)
	}
	item.SetOperation(op.Method, o)
	return nil
}

// addAlt documents an alternative answer: under a problem's status, the
// problem's response with one more media type; else a response of its own.
func addAlt(doc *openapi3.T, o *openapi3.Operation, op Op, alt Alt) {
	status := strconv.Itoa(alt.Status)
	r := successResponse(Op{Summary: alt.Description, Limit: op.Limit})
	if prev := o.Responses.Value(status); prev != nil && prev.Ref != "" {
		shared := doc.Components.Responses[status].Value
		desc := *shared.Description + " Or: " + alt.Description
		r.Description = &desc
		for name, h := range shared.Headers {
			r.Headers[name] = h
		}
		r.Content = openapi3.Content{}
		for mt, c := range shared.Content {
			r.Content[mt] = c
		}
	}
	if alt.Schema != "" {
		if r.Content == nil {
			r.Content = openapi3.Content{}
		}
		r.Content["application/json"] = &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: "#/components/schemas/" + alt.Schema}}
	}
	o.Responses.Set(status, &openapi3.ResponseRef{Value: r})
}

func successResponse(op Op) *openapi3.Response {
	desc := op.Summary
	r := &openapi3.Response{Description: &desc, Headers: openapi3.Headers{"X-Request-ID": {Ref: "#/components/headers/X-Request-ID"}}}
	if op.Limit != LimitNone {
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			r.Headers[h] = &openapi3.HeaderRef{Ref: "#/components/headers/" + h}
		}
	}
	if op.OK.Replayable {
		r.Headers["Idempotent-Replayed"] = &openapi3.HeaderRef{Ref: "#/components/headers/Idempotent-Replayed"}
	}
	for _, h := range op.OK.Headers {
		r.Headers[h] = &openapi3.HeaderRef{Ref: "#/components/headers/" + h}
	}
	r.Links = links(op.OK.Links)
	switch {
	case op.OK.Schema != "":
		mt := &openapi3.MediaType{Schema: &openapi3.SchemaRef{Ref: "#/components/schemas/" + op.OK.Schema}}
		if op.OK.Example != "" {
			mt.Examples = openapi3.Examples{op.OK.Example: {Ref: "#/components/examples/" + op.OK.Example}}
		}
		r.Content = openapi3.Content{"application/json": mt}
		if op.OK.Media != "" {
			// A page that also answers JSON by content negotiation.
			r.Content[op.OK.Media] = &openapi3.MediaType{Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{}}}
		}
	case op.OK.Media != "":
		r.Content = openapi3.Content{op.OK.Media: &openapi3.MediaType{Schema: &openapi3.SchemaRef{Value: &openapi3.Schema{}}}}
	}
	return r
}
