package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
	"github.com/foodsafe/foodsafe/internal/openapi"
)

func TestOpenAPIDocumentServed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/openapi.json")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "the served document validates")
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Contains(t, doc.Components.SecuritySchemes, "bearerAuth")
	for _, c := range catalog.Collections {
		require.Contains(t, doc.Components.Schemas, pascalName(c.Name)+"Data", c.Name)
	}
	for _, h := range []string{"X-Request-ID", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "Idempotent-Replayed"} {
		require.Contains(t, doc.Components.Headers, h)
	}
	for _, p := range []string{"IdempotencyKey", "ReprDigest", "RequestId"} {
		require.Contains(t, doc.Components.Parameters, p)
	}
	for _, s := range []string{"400", "401", "403", "404", "409", "413", "429", "500", "503"} {
		require.Contains(t, doc.Components.Responses, s)
	}
	// `foodsafe openapi` prints the same document.
	cli := a.cli("openapi")
	require.Equal(t, 0, cli.Code, cli.Stderr)
	require.JSONEq(t, string(r.Body), cli.Stdout)
}

// withoutQuery is ex without its query string.
func withoutQuery(ex exchange) exchange {
	ex.URL, _, _ = strings.Cut(ex.URL, "?")
	return ex
}

// withHeader is ex with a request header field set.
func withHeader(ex exchange, name, value string) exchange {
	ex.Header = withHeaders(ex.Header, name, value)
	return ex
}

// withHeaders is h with more header fields (name, value pairs).
func withHeaders(h http.Header, kv ...string) http.Header {
	h = h.Clone()
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// The asset upload documents the objectKey it requires, with the rule of
// data.asset.objectKey, so a client generated from the document can
// upload; the delivery image upload lists the five photograph types it
// takes instead of any type.
func TestOpenAPIUploads(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	asset := ct.doc.Paths.Value("/v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/asset").Put
	require.NotNil(t, asset)
	var objectKey *openapi3.Parameter
	for _, p := range asset.Parameters {
		if p.Value.In == "query" && p.Value.Name == "objectKey" {
			objectKey = p.Value
		}
	}
	require.NotNil(t, objectKey, "the objectKey query parameter")
	require.True(t, objectKey.Required)
	require.Equal(t, "#/components/schemas/ObjectKey", objectKey.Schema.Ref, "the rule of data.asset.objectKey")
	require.Equal(t, uint64(1024), *objectKey.Schema.Value.MaxLength)
	require.Equal(t, []string{"*/*"}, slices.Collect(maps.Keys(asset.RequestBody.Value.Content)), "an asset is any file")

	image := ct.doc.Paths.Value("/v1/ingest/restaurants/{restaurantId}/deliveries/{deliveryId}/images/{imageId}").Put
	require.NotNil(t, image)
	require.Equal(t, []string{"image/heic", "image/heif", "image/jpeg", "image/png", "image/webp"},
		slices.Sorted(maps.Keys(image.RequestBody.Value.Content)))
}

func pascalName(s string) string {
	parts := strings.Split(s, "-")
	for i, p := range parts {
		parts[i] = strings.ToUpper(p[:1]) + p[1:]
	}
	return strings.Join(parts, "")
}

// Every route the server registers is documented, and every documented
// operation is served.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ct, err := loadContract()
	require.NoError(t, err)
	registered := map[string]bool{}
	heads := 0
	for _, r := range a.svc.Engine.Routes() {
		key := r.Method + " " + openapi.OpenAPIPath(r.Path)
		registered[key] = true
		item := ct.doc.Paths.Value(openapi.OpenAPIPath(r.Path))
		require.NotNil(t, item, "%s is not documented", key)
		if r.Method == http.MethodHead && item.GetOperation(r.Method) == nil {
			// HEAD mirrors a documented GET (RFC 9110 9.1).
			require.NotNil(t, item.Get, "%s answers HEAD but not GET", key)
			heads++
			continue
		}
		require.NotNil(t, item.GetOperation(r.Method), "%s is not documented", key)
	}
	for path, item := range ct.doc.Paths.Map() {
		if item.Get != nil {
			require.True(t, registered["HEAD "+path], "GET %s does not answer HEAD", path)
		}
	}
	typed := 0
	for path, item := range ct.doc.Paths.Map() {
		for method := range item.Operations() {
			if registered[method+" "+path] {
				continue
			}
			// An operation typed for one collection is its route with the
			// collection named in the path.
			generic := strings.Replace(path, "/collections/"+collectionSegment(path)+"/", "/collections/{collection}/", 1)
			require.True(t, registered[method+" "+generic] && collectionSegment(path) != "{collection}",
				"%s %s is documented but not served", method, path)
			_, known := catalog.Lookup(collectionSegment(path))
			require.True(t, known, "%s %s names no collection", method, path)
			typed++
		}
	}
	require.Equal(t, len(catalog.Collections), typed, "the snapshot ingest, once per collection")
	require.Len(t, registered, 33+heads, "the route table, counted by hand, and HEAD for every GET")
	require.Equal(t, 21, heads, "every GET but the file download, whose HEAD is documented")
}

// collectionSegment is the path segment after /collections/.
func collectionSegment(path string) string {
	_, rest, _ := strings.Cut(path, "/collections/")
	seg, _, _ := strings.Cut(rest, "/")
	return seg
}

func TestDocsPage(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/docs")
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, r.Header.Get("Content-Type"), "text/html")
	require.Contains(t, string(r.Body), "/openapi.json")
	require.NotContains(t, string(r.Body), "cdn", "assets come from the binary")
	js := a.get("/docs/swagger-ui-bundle.js")
	require.Equal(t, http.StatusOK, js.Status)
	require.Greater(t, len(js.Body), 100_000)
	requireProblem(t, a.get("/docs/nope.js"), http.StatusNotFound, "not-found")
}

// The contract check refuses what is off the document.
func TestContractRejectsOffSpecExchanges(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	jsonH := http.Header{"Content-Type": {"application/json"}}
	problemH := http.Header{"Content-Type": {"application/problem+json"}}
	bearer := http.Header{"Authorization": {"Bearer fsk_aaaaaaaaaaaaaaaa.x"}}
	ok := exchange{Method: "GET", URL: "/health/live", Status: 200, RHeader: jsonH, RBody: []byte(`{"status":"ok"}`)}
	require.NoError(t, ct.check(ok), "a conforming exchange passes")
	sha := strings.Repeat("ab", 32)
	assetUpload := exchange{Method: "PUT", URL: "/v1/ingest/restaurants/r1/collections/drive-files/records/f1/asset?objectKey=plan.pdf",
		Header: withHeaders(bearer, "Content-Type", "application/pdf", "Repr-Digest", "sha-256=:x:"), Body: []byte("%PDF"),
		Status: 200, RHeader: jsonH, RBody: []byte(`{"data":{"id":"f1","restaurantId":"r1","collection":"drive-files","data":{"s3Key":"k",` +
			`"name":"plan.pdf","sizeBytes":4,"asset":{"objectKey":"plan.pdf","status":"uploaded","contentType":"application/pdf","byteLength":4,` +
			`"sha256":"` + sha + `"}},"deleted":false,"capturedAt":"1","receivedAt":"2","sequence":"2","mutationId":"upload~` + sha[:32] + `",` +
			`"sourceVersion":null,"payloadVersion":1,"stateKind":"received-shadow-snapshot"}}`)}
	require.NoError(t, ct.check(assetUpload), "a conforming upload passes")
	imageUpload := exchange{Method: "PUT", URL: "/v1/ingest/restaurants/r1/deliveries/d1/images/i1",
		Header: withHeaders(bearer, "Content-Type", "image/jpeg", "Repr-Digest", "sha-256=:x:"), Body: []byte{0xff, 0xd8, 0xff},
		Status: 200, RHeader: jsonH, RBody: []byte(`{"data":{"id":"i1","contentType":"image/jpeg","byteLength":3,"sha256":"` + sha + `",` +
			`"uploadedAt":"1","url":"https://files.example/i1","urlExpiresAt":"2"}}`)}
	require.NoError(t, ct.check(imageUpload), "a conforming delivery image passes")

	for name, ex := range map[string]exchange{
		"undocumented member": {Method: "GET", URL: "/health/live", Status: 200, RHeader: jsonH, RBody: []byte(`{"status":"ok","uptime":3}`)},
		"wrong value":         {Method: "GET", URL: "/health/live", Status: 200, RHeader: jsonH, RBody: []byte(`{"status":"fine"}`)},
		"undocumented status": {Method: "GET", URL: "/health/live", Status: 418, RHeader: jsonH, RBody: []byte(`{"status":"ok"}`)},
		"undocumented type":   {Method: "GET", URL: "/health/live", Status: 200, RHeader: http.Header{"Content-Type": {"text/plain"}}, RBody: []byte(`ok`)},
		"missing member": {Method: "GET", URL: "/v1/restaurants", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"data":[{"restaurantId":"r1"}]}`)},
		"timestamp as number": {Method: "GET", URL: "/v1/restaurants/r1/deliveries/d1", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"id":"d1","restaurantId":"r1","occurredAt":1,"isCompliant":true,"supplier":{"id":"s","name":"n"},"temperatureRecords":[],"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":0}`)},
		"problem without requestId": {Method: "GET", URL: "/v1/restaurants", Status: 401, RHeader: problemH,
			RBody: []byte(`{"type":"x/problems/unauthorized","title":"t","status":401,"detail":"d","instance":"/v1/restaurants"}`)},
		"invalid request accepted": {Method: "GET", URL: "/v1/restaurants/r1/deliveries?from=yesterday&to=1", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"data":[],"nextCursor":null}`)},
		"walk page without changesCursor": {Method: "GET", URL: "/v1/restaurants/r1/collections/areas/records", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"data":[],"nextCursor":null}`)},
		"unauthenticated request accepted": {Method: "GET", URL: "/v1/restaurants", Status: 200, RHeader: jsonH, RBody: []byte(`{"data":[]}`)},
		"undocumented route answering":     {Method: "GET", URL: "/v1/secret", Status: 200, RHeader: jsonH, RBody: []byte(`{}`)},
		"envelope data of another shape": {Method: "GET", URL: "/v1/restaurants/r1/collections/areas/records/a1", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"id":"a1","restaurantId":"r1","collection":"areas","data":{"name":"x"},"deleted":false,"capturedAt":"1","receivedAt":"2","sequence":"1","mutationId":"m","sourceVersion":null,"payloadVersion":1,"stateKind":"received-shadow-snapshot"}`)},
		"tombstone with data": {Method: "GET", URL: "/v1/restaurants/r1/collections/areas/records/a1", Header: bearer, Status: 200, RHeader: jsonH,
			RBody: []byte(`{"id":"a1","restaurantId":"r1","collection":"areas","data":{"name":"x","isDeleted":false},"deleted":true,"capturedAt":"1","receivedAt":"2","sequence":"1","mutationId":"m","sourceVersion":null,"payloadVersion":1,"stateKind":"received-shadow-snapshot"}`)},
		"upload without objectKey accepted":         withoutQuery(assetUpload),
		"a delivery image of another type accepted": withHeader(imageUpload, "Content-Type", "application/pdf"),
	} {
		t.Run(name, func(t *testing.T) {
			require.Error(t, ct.check(ex))
		})
	}
}

// Every number in the served document says it is a double and every
// integer its width: generators read a bare `type: number` as a 32-bit
// float (5.6 comes back as 5.599999904632568, and 1e300, which the service
// accepts, fails to decode).
func TestOpenAPINumbersKeepPrecision(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/v1/openapi.json")
	require.Equal(t, http.StatusOK, r.Status)
	var doc any
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	var numbers, integers int
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			var types string
			switch ty := v["type"].(type) {
			case string:
				types = ty
			case []any:
				types = fmt.Sprint(ty...)
			}
			switch {
			case strings.Contains(types, "number"):
				numbers++
				assert.Equal(t, "double", v["format"], path)
			case strings.Contains(types, "integer"):
				integers++
				assert.Contains(t, []any{"int32", "int64"}, v["format"], path)
			}
			for k, c := range v {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("", doc)
	require.Positive(t, numbers, "the document has numbers")
	require.Positive(t, integers, "the document has integers")
}

// Every problem type URI resolves (RFC 9457): JSON for clients that ask
// for it, a page for browsers, without a key and outside the rate limit;
// an unknown code is the one 404.
func TestProblemTypesResolve(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(1))
	// A real problem document's type, followed as a client would.
	p := requireProblem(t, a.get("/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	u, err := url.Parse(p.Type)
	require.NoError(t, err)
	r := a.get(u.Path, "Accept", "application/json")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var page struct {
		Type, Code, Title, When, Retry string
		Status                         int
	}
	require.NoError(t, json.Unmarshal(r.Body, &page))
	require.Equal(t, p.Type, page.Type)
	require.Equal(t, "unauthorized", page.Code)
	require.Equal(t, p.Title, page.Title)
	require.Equal(t, 401, page.Status)
	require.Empty(t, r.Header.Get("X-RateLimit-Limit"))

	html := a.get(u.Path, "Accept", "text/html,application/xhtml+xml,application/json;q=0.9")
	require.Equal(t, http.StatusOK, html.Status)
	require.Equal(t, "text/html; charset=utf-8", html.Header.Get("Content-Type"))
	require.Contains(t, string(html.Body), "<h1>"+p.Title+"</h1>")
	require.Contains(t, string(html.Body), "<strong>401</strong>")

	for _, k := range apperr.Kinds {
		r := a.get("/problems/"+string(k.Code), "Accept", "application/problem+json")
		require.Equal(t, http.StatusOK, r.Status, k.Code)
		require.NoError(t, json.Unmarshal(r.Body, &page))
		require.Equal(t, k.Status, page.Status, k.Code)
		require.Equal(t, k.Retry, page.Retry, k.Code)
	}
	requireProblem(t, a.get("/problems/no-such-problem"), http.StatusNotFound, "not-found")
	requireProblem(t, a.get("/problems/NOT_A_CODE"), http.StatusNotFound, "not-found")
}

// The served document passes a second OpenAPI validator, in another
// language (openapi-spec-validator, Python), and every pattern in it
// compiles in a second regular-expression engine (Python's re, which
// refuses \p{...} classes, as the validators built on it do): a partner's
// toolchain reads what ours does. CI installs the validator (.ci/run);
// elsewhere the test skips without it, saying what to install.
func TestOpenAPISecondValidator(t *testing.T) {
	t.Parallel()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: CI must run the second OpenAPI validator", what)
		}
		t.Skipf("skipped: %s (CI runs this test; set CI to make this a failure)", what)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		missing("python3 is not installed")
	}
	if err := exec.Command(python, "-m", "openapi_spec_validator", "--version").Run(); err != nil {
		missing("openapi-spec-validator is not installed: python3 -m pip install openapi-spec-validator")
	}
	a := newApp(t)
	r := a.get("/v1/openapi.json")
	require.Equal(t, http.StatusOK, r.Status)
	file := filepath.Join(t.TempDir(), "openapi.json")
	require.NoError(t, os.WriteFile(file, r.Body, 0o600))
	out, err := exec.Command(python, "-m", "openapi_spec_validator", file).CombinedOutput()
	require.NoError(t, err, "openapi-spec-validator: %s", out)
	out, err = exec.Command(python, "../.ci/patterns.py", file).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "patterns compile with Python's re")
}

// A generated client narrows a record by its collection: Envelope is a
// union of one envelope per collection, discriminated by `collection`
// (a one-value enum) and carrying that collection's data schema; the
// records feed's items narrow by `stream` the same way; every collection
// has an ingest operation whose body's data is that collection's schema.
// (Conditionals on `collection`, which generators ignore, do not count.)
func TestOpenAPITypesEveryCollection(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	schemas := ct.doc.Components.Schemas
	union := func(name, discriminator string, member func(c string) string, others map[string]string) {
		t.Helper()
		u := schemas[name].Value
		require.NotNil(t, u.Discriminator, name)
		require.Equal(t, discriminator, u.Discriminator.PropertyName, name)
		want := maps.Clone(others)
		for _, c := range catalog.Collections {
			want[c.Name] = member(c.Name)
		}
		require.Len(t, u.OneOf, len(want), name)
		require.Len(t, u.Discriminator.Mapping, len(want), name)
		for value, m := range want {
			ref := "#/components/schemas/" + m
			require.Equal(t, ref, u.Discriminator.Mapping[value].Ref, "%s: %s", name, value)
			require.True(t, slices.ContainsFunc(u.OneOf, func(r *openapi3.SchemaRef) bool { return r.Ref == ref }), "%s: %s", name, m)
			prop := schemas[m].Value.Properties[discriminator].Value
			require.Equal(t, []any{value}, prop.Enum, "%s.%s names its one value", m, discriminator)
			require.Contains(t, schemas[m].Value.Required, discriminator)
		}
	}
	union("Envelope", "collection", func(c string) string { return pascalName(c) + "Envelope" }, map[string]string{})
	union("RecordFeedItem", "stream", func(c string) string { return pascalName(c) + "FeedItem" },
		map[string]string{"deliveries": "DeliveriesFeedItem"})
	ingest := 0
	for _, c := range catalog.Collections {
		p := pascalName(c.Name)
		require.Equal(t, "#/components/schemas/"+p+"Data", schemas[p+"Envelope"].Value.Properties["data"].Ref, c.Name)
		require.Equal(t, "#/components/schemas/"+p+"Envelope", schemas[p+"FeedItem"].Value.Properties["record"].Ref, c.Name)
		// A snapshot is live, with the collection's data, or a tombstone,
		// whose data is ignored: a union generators type by `deleted`.
		require.Equal(t, []string{"#/components/schemas/" + p + "LiveSnapshot", "#/components/schemas/TombstoneSnapshot"},
			[]string{schemas[p+"Snapshot"].Value.OneOf[0].Ref, schemas[p+"Snapshot"].Value.OneOf[1].Ref}, c.Name)
		live := schemas[p+"LiveSnapshot"].Value
		require.Equal(t, "#/components/schemas/"+p+"Data", live.Properties["data"].Ref, c.Name)
		require.Contains(t, live.Required, "data")
		require.Equal(t, false, live.Properties["deleted"].Value.Const)
		item := ct.doc.Paths.Value("/v1/ingest/restaurants/{restaurantId}/collections/" + c.Name + "/records/{recordId}/mutations/{mutationId}")
		require.NotNil(t, item, c.Name)
		body := item.Put.RequestBody.Value.Content["application/json"].Schema
		require.Equal(t, "#/components/schemas/"+p+"Snapshot", body.Ref, c.Name)
		require.Equal(t, "ingest"+p+"Snapshot", item.Put.OperationID)
		ingest++
	}
	require.Equal(t, 24, ingest)
	delivery := schemas["DeliveriesFeedItem"].Value
	require.Equal(t, "#/components/schemas/DeliveryRecord", delivery.Properties["delivery"].Ref)
	require.NotContains(t, delivery.Properties, "record")

	// The document's schemas still hold each collection to its own shape.
	record := func(collection, data string) []byte {
		return []byte(`{"id":"a1","restaurantId":"r1","collection":"` + collection + `","data":` + data + `,"deleted":false,` +
			`"capturedAt":"1","receivedAt":"2","sequence":"1","mutationId":"m","sourceVersion":null,"payloadVersion":1,` +
			`"stateKind":"received-shadow-snapshot"}`)
	}
	require.NoError(t, ct.validateJSON("#/components/schemas/Envelope", record("areas", `{"name":"Cold room","isDeleted":false}`)))
	require.Error(t, ct.validateJSON("#/components/schemas/Envelope", record("products", `{"name":"x"}`)), "products data without isDeleted")
	require.Error(t, ct.validateJSON("#/components/schemas/Envelope", record("nope", `{"name":"Cold room","isDeleted":false}`)))
	feedItem := `{"restaurantId":"r1","stream":"areas","record":` + string(record("areas", `{"name":"Cold room","isDeleted":false}`)) + `}`
	require.NoError(t, ct.validateJSON("#/components/schemas/RecordFeedItem", []byte(feedItem)))
	require.Error(t, ct.validateJSON("#/components/schemas/RecordFeedItem",
		[]byte(strings.Replace(feedItem, `"stream":"areas"`, `"stream":"users"`, 1))), "a users item holding an areas record")
}

// The rules the service enforces are in the document: each request below
// is one the document calls invalid and the service refuses with a 400.
// NUL (U+0000) in free text, by a pattern every engine compiles; a
// JSON-RPC batch; an upload to a collection without files; a scope name
// outside the catalog.
func TestOpenAPIStatesEnforcedRules(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	a := newApp(t)
	a.addRestaurants("r1")
	var writes []string
	for _, c := range catalog.Collections {
		writes = append(writes, c.WriteScope())
	}
	device := a.newKey(grant("r1", append(writes, "areas:read")...))
	schema := func(name string) string { return "#/components/schemas/" + name }

	// NUL in free text.
	body := snapshot("r1", "a1", "m1", 1_700_000_000_000, false, map[string]any{"name": "Cold\u0000room", "isDeleted": false})
	require.Error(t, ct.validateJSON(schema("AreasSnapshot"), mustJSON(t, body)), "the document refuses NUL in Text")
	require.Equal(t, `^[^\x00]*$`, ct.doc.Components.Schemas["Text"].Value.Pattern)
	require.Contains(t, ct.doc.Components.Schemas["Text"].Value.Description, "U+0000")
	requireProblem(t, a.ingest(device, "r1", "areas", "a1", "m1", body), http.StatusBadRequest, "invalid-request")
	body["data"] = map[string]any{"name": "Cold room", "isDeleted": false}
	require.NoError(t, ct.validateJSON(schema("AreasSnapshot"), mustJSON(t, body)))

	// A JSON-RPC batch.
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`
	require.Error(t, ct.validateJSON(schema("JsonRpcRequest"), []byte(batch)))
	require.NoError(t, ct.validateJSON(schema("JsonRpcRequest"), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)))
	r := a.do(req{Method: http.MethodPost, Path: "/mcp", Body: strings.NewReader(batch), Header: map[string]string{
		"Authorization": "Bearer " + device, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}})
	require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)

	// The upload routes take the three collections that carry files.
	upload := ct.doc.Paths.Value("/v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/asset").Put
	var enum []any
	for _, p := range upload.Parameters {
		if p.Value.In == "path" && p.Value.Name == "collection" {
			enum = p.Value.Schema.Value.Enum
		}
	}
	for _, c := range catalog.Collections {
		require.Equal(t, c.CarriesFiles, slices.Contains(enum, any(c.Name)), c.Name)
	}
	require.Len(t, enum, 3)
	photo := []byte("not a file-carrying collection")
	requireProblem(t, a.upload(device, "/v1/ingest/restaurants/r1/collections/areas/records/a1/asset?objectKey=x.png",
		"image/png", digestHeader(photo), photo), http.StatusBadRequest, "invalid-request")

	// Scope names.
	var names []string
	for _, n := range ct.doc.Components.Schemas["SessionRequest"].Value.Properties["scopes"].Value.Items.Value.Enum {
		names = append(names, n.(string))
	}
	require.Equal(t, catalog.Scopes(), names)
	unknown := []byte(`{"scopes":["drains:write"]}`)
	require.Error(t, ct.validateJSON(schema("SessionRequest"), unknown))
	r = a.do(req{Method: http.MethodPost, Path: "/v1/mobile/sessions", Body: bytes.NewReader(unknown),
		Header: map[string]string{"Authorization": "Bearer " + device, "Content-Type": "application/json"}})
	require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
}

// Every answer a client follows declares links (walk -> next page,
// listing -> walk, record -> assets, changes -> walk, session -> ingest),
// and every link resolves: its operationId is an operation of the
// document, each parameter is one of that operation's, each
// $request.path/$request.query one of the linking operation's, each
// $response.body pointer a member of the success response's schema; and
// the target's path parameters are all given (but for the session's link
// to ingest, which gives the restaurant only: the record is the client's).
func TestOpenAPILinksResolve(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	ops := map[string]*openapi3.Operation{}
	for _, item := range ct.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops[op.OperationID] = op
		}
	}
	params := func(op *openapi3.Operation, in string) map[string]bool {
		out := map[string]bool{}
		for _, p := range op.Parameters {
			if p.Value.In == in {
				out[p.Value.Name] = true
			}
		}
		return out
	}
	partial := map[string]bool{"createMobileSession ingest": true}
	seen := map[string]bool{}
	for _, item := range ct.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				for name, l := range r.Value.Links {
					at := op.OperationID + " " + name
					seen[at] = true
					target := ops[l.Value.OperationID]
					require.NotNil(t, target, "%s: no operation %s", at, l.Value.OperationID)
					path, query := params(target, "path"), params(target, "query")
					for pname, expr := range l.Value.Parameters {
						require.True(t, path[pname] || query[pname], "%s: %s takes no parameter %s", at, l.Value.OperationID, pname)
						e := expr.(string)
						switch {
						case strings.HasPrefix(e, "$request.path."):
							require.True(t, params(op, "path")[strings.TrimPrefix(e, "$request.path.")], "%s: %s", at, e)
						case strings.HasPrefix(e, "$request.query."):
							require.True(t, params(op, "query")[strings.TrimPrefix(e, "$request.query.")], "%s: %s", at, e)
						case strings.HasPrefix(e, "$response.body#/"):
							s := r.Value.Content["application/json"].Schema
							require.True(t, schemaHas(s, strings.Split(strings.TrimPrefix(e, "$response.body#/"), "/")),
								"%s %s: %s is not in the answer", at, status, e)
						default:
							t.Errorf("%s: %s is not a runtime expression links use here", at, e)
						}
					}
					if !partial[at] {
						for p := range path {
							require.Contains(t, l.Value.Parameters, p, "%s: the path parameter %s of %s", at, p, l.Value.OperationID)
						}
					}
				}
			}
		}
	}
	for _, want := range []string{"walkRecords nextPage", "walkRecords changesLater", "listCollections walk", "getRecord assets",
		"listChanges walk", "listChanges nextPage", "createMobileSession ingest", "walkAllRecords nextPage", "listDeliveries nextPage",
		"listDeliveryChanges nextPage", "ingestSnapshot record", "ingestAreasSnapshot record", "uploadRecordAsset assets"} {
		require.True(t, seen[want], "the link %s", want)
	}
}

// schemaHas reports whether a JSON Pointer's tokens name a member of s
// (through array items, and any member of a union or intersection).
func schemaHas(s *openapi3.SchemaRef, tokens []string) bool {
	if s == nil || s.Value == nil {
		return false
	}
	if len(tokens) == 0 {
		return true
	}
	v := s.Value
	for _, group := range []openapi3.SchemaRefs{v.OneOf, v.AnyOf, v.AllOf} {
		for _, m := range group {
			if schemaHas(m, tokens) {
				return true
			}
		}
	}
	if _, err := strconv.Atoi(tokens[0]); err == nil && v.Items != nil {
		return schemaHas(v.Items, tokens[1:])
	}
	return schemaHas(v.Properties[tokens[0]], tokens[1:])
}

// Every path parameter and request body of the document has an example,
// and the examples agree: each operation, sent as its examples say (path,
// required query and header parameters, body), succeeds against the demo
// data with a key of the demo restaurant. The signed download is the
// exception: its URL's signature and expiry come from a listing, never
// from an example.
func TestOpenAPIExamplesSucceedOnDemoData(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	a := newApp(t)
	demo := a.cli("demo")
	require.Equal(t, 0, demo.Code, demo.Stderr)
	key := a.newKey(grant("demo-bistro", catalog.Scopes()...)) // a device key: sessions need write scopes
	// The signed download's URL comes from a listing, an upload
	// resource's from the Location of the upload that created it: never
	// from an example (TestResumableUploadResource sends them).
	signed := map[string]bool{"downloadFile": true, "headFile": true, "headUpload": true, "resumeUpload": true, "cancelUpload": true}
	sent := 0
	for path, item := range ct.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ex, ok := exampleRequest(t, path, op)
			if signed[op.OperationID] {
				continue
			}
			if op.OperationID == "putDeliveryImage" && !ok {
				// A photograph's bytes are not text, which the document
				// cannot carry: its example is the image the example
				// delivery lists, as the operation says.
				require.Contains(t, op.Description, "example delivery's photograph")
				ex.Body, ex.Header["Content-Type"], ok = examples.Photo(), examples.ImageType, true
			}
			require.True(t, ok, "%s has no example of every required part", op.OperationID)
			ex.Method = method
			if op.Security != nil && len(*op.Security) > 0 {
				ex.Header["Authorization"] = "Bearer " + key
			}
			if op.OperationID == "mcp" {
				ex.Header["Accept"] = "application/json, text/event-stream" // as the operation says
			}
			r := a.do(req{Method: ex.Method, Path: ex.URL, Header: ex.Header, Body: bytes.NewReader(ex.Body)})
			require.True(t, r.Status >= 200 && r.Status < 300, "%s %s: %d %s", method, ex.URL, r.Status, r.Body)
			if op.OperationID == "ingestBatch" {
				var out struct{ Data []struct{ Status int } }
				r.JSON(t, &out)
				require.NotEmpty(t, out.Data)
				for _, d := range out.Data {
					require.Equal(t, http.StatusOK, d.Status, "every item of the example batch succeeds: %s", r.Body)
				}
			}
			if op.OperationID == "mcp" {
				require.NotContains(t, string(r.Body), `"isError":true`, "%s", r.Body)
				require.NotContains(t, string(r.Body), `"error":`, "%s", r.Body)
			}
			sent++
		}
	}
	require.Equal(t, 33-5+len(catalog.Collections), sent, "every operation but the signed download and its HEAD, and the upload resource's")
}

// exampleRequest builds the request an operation's examples describe; ok
// is false when a path parameter, a required query or header parameter or
// the body has no example.
func exampleRequest(t *testing.T, path string, op *openapi3.Operation) (ex struct {
	Method, URL string
	Header      map[string]string
	Body        []byte
}, ok bool) {
	ex.Header = map[string]string{}
	query := url.Values{}
	for _, p := range op.Parameters {
		v := p.Value
		if v.Example == nil {
			if v.In == "path" || v.Required {
				return ex, false
			}
			continue
		}
		s := fmt.Sprint(v.Example)
		switch v.In {
		case "path":
			path = strings.Replace(path, "{"+v.Name+"}", url.PathEscape(s), 1)
		case "query":
			query.Set(v.Name, s)
		case "header":
			ex.Header[v.Name] = s
		}
	}
	ex.URL = path
	if len(query) > 0 {
		ex.URL += "?" + query.Encode()
	}
	if op.RequestBody == nil {
		return ex, true
	}
	for media, mt := range op.RequestBody.Value.Content {
		// The first example by name, so that every run sends the same
		// one (mcp's McpCall, which its header examples describe, not
		// McpNotification).
		names := slices.Sorted(maps.Keys(mt.Examples))
		if len(names) == 0 {
			continue
		}
		e := mt.Examples[names[0]]
		switch {
		case media == "application/json":
			ex.Body, ex.Header["Content-Type"] = mustJSON(t, e.Value.Value), media
		default:
			s, isString := e.Value.Value.(string)
			require.True(t, isString, "a file's example is its text")
			// Any type: the file was uploaded as text/plain.
			ex.Body, ex.Header["Content-Type"] = []byte(s), "text/plain"
		}
		return ex, true
	}
	return ex, false
}
