package tests

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
)

// A property-based run over the service's own OpenAPI document: rapid
// draws requests from the document's operations, parameters and schemas
// (valid ones, the examples, and broken ones: missing or malformed
// parameters, bodies of the wrong shape, other keys or none), sends each
// to the real service loaded with the demo data, and follows the links
// the answers declare. Properties: no answer is a 5xx (a failure is shrunk
// to the smallest request that shows it); every exchange holds to the
// document (the contract check of every test: status, headers, body
// against its declared schema, and no request the document calls invalid
// is accepted); every status an operation declares is reached here or is
// justified below by the test that reaches it.
func TestOpenAPIPropertyBased(t *testing.T) {
	t.Parallel()
	ct, err := loadContract()
	require.NoError(t, err)
	a := newApp(t)
	demo := a.cli("demo")
	require.Equal(t, 0, demo.Code, demo.Stderr)
	pb := &propertyRun{ct: ct, a: a, reached: map[string]map[int]bool{}, keys: map[string]string{
		"reader": strings.TrimSpace(demo.Stdout), // the demo key: every read scope
		"device": a.newKey(grant(examples.Restaurant, catalog.Scopes()...)),
		"narrow": a.newKey(grant(examples.Restaurant, "areas:read", "areas:write")),
		"none":   "",
		"bogus":  "fsk_aaaaaaaaaaaaaaaaaaaa.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
	}}
	for path, item := range ct.doc.Paths.Map() {
		for method, op := range item.Operations() {
			pb.ops = append(pb.ops, propertyOp{path: path, method: method, op: op})
		}
	}
	sort.Slice(pb.ops, func(i, j int) bool { return pb.ops[i].op.OperationID < pb.ops[j].op.OperationID })
	// The typed ingests are one operation drawn with its collection, so
	// that each draw of an operation is as likely as another's.
	var generic, typed []propertyOp
	for _, o := range pb.ops {
		if typedIngest.MatchString(o.op.OperationID) {
			typed = append(typed, o)
		} else {
			generic = append(generic, o)
		}
	}
	// Each case sends one request of every operation (one of the typed
	// ingests), in an order it draws.
	generic = append(generic, propertyOp{}) // the typed ingests' place
	rapid.Check(t, func(rt *rapid.T) {
		for _, o := range rapid.Permutation(generic).Draw(rt, "operations") {
			if o.op == nil {
				o = rapid.SampledFrom(typed).Draw(rt, "typed operation")
			}
			pb.exchange(rt, o, nil, 0)
		}
	})
	t.Logf("%d requests", pb.sent)
	pb.requireReached(t)
}

// A failure prints its seed (-rapid.seed reproduces it) instead of
// writing a fail file into the repository.
// The run starts from a fixed seed, so that which statuses it reaches
// does not change from one run to the next; FOODSAFE_PROPERTY_SEED (or
// -rapid.seed) draws others. 50 cases of one request per operation (and
// the links and downloads they lead to) keep it to a few seconds;
// -rapid.checks runs more.
func init() {
	seed := cmp.Or(os.Getenv("FOODSAFE_PROPERTY_SEED"), "20261129")
	for name, v := range map[string]string{"rapid.nofailfile": "true", "rapid.seed": seed, "rapid.checks": "50"} {
		if err := flag.Set(name, v); err != nil {
			panic(err)
		}
	}
}

var typedIngest = regexp.MustCompile(`^ingest[A-Z][A-Za-z]*Snapshot$`)

type propertyOp struct {
	path, method string
	op           *openapi3.Operation
}

type propertyRun struct {
	ct      *contract
	a       *app
	ops     []propertyOp
	keys    map[string]string
	reached map[string]map[int]bool // operationId (the typed ingests as one) -> statuses answered
	// byExample: the request being drawn takes the examples (mostly).
	byExample bool
	sent      int
}

// given are parameter values a link sets, by name.
type given map[string]any

// exchange draws a request of o (parameters in given as they are), sends
// it, records its status, and may follow the answer's links.
func (pb *propertyRun) exchange(rt *rapid.T, o propertyOp, g given, hops int) {
	who := rapid.SampledFrom([]string{"reader", "device", "device", "narrow", "none", "bogus"}).Draw(rt, "key")
	if g != nil {
		who = "device" // a link is followed as the client that got the answer
	}
	// One request in three is the operation's example, perhaps with one
	// part drawn anew: what a client sends, and its near misses.
	pb.byExample = rapid.IntRange(0, 2).Draw(rt, "by example") == 0
	if pb.byExample && g == nil && rapid.IntRange(0, 2).Draw(rt, "example key") > 0 {
		who = "device"
	}
	r := req{Method: o.method, Header: map[string]string{}}
	path := o.path
	query := url.Values{}
	var pathVals = map[string]string{}
	for _, p := range o.op.Parameters {
		v := p.Value
		val, ok := g[v.Name]
		if !ok {
			val, ok = pb.param(rt, o.op.OperationID, v)
		}
		if !ok {
			continue
		}
		s := fmt.Sprint(val)
		switch v.In {
		case "path":
			pathVals[v.Name] = s
			path = strings.Replace(path, "{"+v.Name+"}", url.PathEscape(s), 1)
		case "query":
			query.Set(v.Name, s)
		case "header":
			r.Header[v.Name] = s
		}
	}
	if rapid.IntRange(0, 19).Draw(rt, "unknown query parameter") == 0 {
		query.Set("unexpected", "1")
	}
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	if rapid.IntRange(0, 11).Draw(rt, "malformed query") == 0 {
		path += map[bool]string{true: "&", false: "?"}[len(query) > 0] + "%zz"
	}
	r.Path = path
	if k := pb.keys[who]; k != "" {
		r.Header["Authorization"] = "Bearer " + k
	}
	if o.op.OperationID == "mcp" {
		r.Header["Accept"] = "application/json, text/event-stream"
	}
	body := pb.body(rt, o.op, r.Header, pathVals)
	res, sent := pb.send(rt, r, body)
	if !sent {
		return
	}
	if res.Status >= 500 {
		rt.Fatalf("%s %s as %s: %d %s", r.Method, r.Path, who, res.Status, res.Body)
	}
	id := o.op.OperationID
	if typedIngest.MatchString(id) {
		id = "ingest<Collection>Snapshot"
	}
	if pb.reached[id] == nil {
		pb.reached[id] = map[int]bool{}
	}
	pb.reached[id][res.Status] = true
	pb.revalidate(rt, o, id, r, res)
	if hops >= 2 || res.Status >= 300 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		return
	}
	var doc any
	if json.Unmarshal(res.Body, &doc) != nil {
		return
	}
	pb.download(rt, doc)
	pb.follow(rt, o, res.Status, doc, pathVals, query, hops)
}

// revalidate sends again, now and then, a request of an operation that
// declares 304 whose answer carried an ETag, with If-None-Match naming it
// as given or altered, as a client keeping the answer does.
func (pb *propertyRun) revalidate(rt *rapid.T, o propertyOp, id string, r req, res response) {
	tag := res.Header.Get("ETag")
	if res.Status != http.StatusOK || tag == "" || o.op.Responses.Status(http.StatusNotModified) == nil ||
		!rapid.Bool().Draw(rt, "revalidate") {
		return
	}
	h := maps.Clone(r.Header)
	h["If-None-Match"] = rapid.SampledFrom([]string{tag, "W/" + tag, `"0", ` + tag, `"0"`, "*"}).Draw(rt, "if-none-match")
	again, sent := pb.send(rt, req{Method: r.Method, Path: r.Path, Header: h}, nil)
	if !sent {
		return
	}
	if again.Status >= 500 {
		rt.Fatalf("%s %s %v: %d %s", r.Method, r.Path, h, again.Status, again.Body)
	}
	pb.reached[id][again.Status] = true
}

// send is app.do for the run: it sends r with body and holds the exchange
// to the document. A body over 256 KiB may meet a connection the service
// closed after answering early (a refusal that needs no body), which the
// client sees as a reset while still writing: sent is false then, and
// nothing is checked. Any other failure to send fails the draw.
func (pb *propertyRun) send(rt *rapid.T, r req, body []byte) (response, bool) {
	hr, err := http.NewRequest(r.Method, pb.a.srv.URL+r.Path, bytes.NewReader(body))
	if err != nil {
		rt.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	res, err := pb.a.srv.Client().Do(hr)
	if err != nil {
		if len(body) > 256<<10 {
			return response{}, false
		}
		rt.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		rt.Fatalf("%s %s: reading the answer: %v", r.Method, r.Path, err)
	}
	out := response{Status: res.StatusCode, Header: res.Header, Body: b}
	pb.sent++
	pb.a.checkContract(exchange{Method: r.Method, URL: r.Path, Header: hr.Header, Body: body, Status: out.Status,
		RHeader: out.Header, RBody: out.Body})
	return out, true
}

// follow sends, for each link of the answer the draw picks, the request
// the link describes.
func (pb *propertyRun) follow(rt *rapid.T, o propertyOp, status int, doc any, pathVals map[string]string, query url.Values, hops int) {
	rr := o.op.Responses.Status(status)
	if rr == nil || rr.Value == nil || len(rr.Value.Links) == 0 {
		return
	}
	names := make([]string, 0, len(rr.Value.Links))
	for n := range rr.Value.Links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !rapid.Bool().Draw(rt, "follow "+n) {
			continue
		}
		l := rr.Value.Links[n].Value
		g := given{}
		complete := true
		for p, expr := range l.Parameters {
			v, ok := resolveLink(expr.(string), doc, pathVals, query)
			if !ok {
				complete = false // e.g. nextCursor on a last page
				break
			}
			g[p] = v
		}
		if !complete {
			continue
		}
		for _, target := range pb.ops {
			if target.op.OperationID == l.OperationID {
				pb.exchange(rt, target, g, hops+1)
			}
		}
	}
}

// download fetches, when the answer lists files, one of their signed URLs
// as the download operations document it: whole, by range, conditionally,
// or with the URL altered.
func (pb *propertyRun) download(rt *rapid.T, doc any) {
	m, _ := doc.(map[string]any)
	items, _ := m["data"].([]any)
	if len(items) == 0 {
		return
	}
	item, _ := rapid.SampledFrom(items).Draw(rt, "file").(map[string]any)
	raw, _ := item["url"].(string)
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return
	}
	path := u.RequestURI()
	switch rapid.IntRange(0, 5).Draw(rt, "url") {
	case 0:
		path = strings.Replace(path, "signature=", "signature=0", 1)
	case 1:
		path = strings.Replace(path, "/v1/files/"+examples.Restaurant+"/", "/v1/files/"+examples.Restaurant+"/0", 1)
	}
	h := map[string]string{}
	size, _ := item["byteLength"].(float64)
	switch rapid.IntRange(0, 5).Draw(rt, "conditions") {
	case 1:
		h["Range"] = fmt.Sprintf("bytes=%d-", rapid.IntRange(0, int(size)+10).Draw(rt, "range start"))
	case 5:
		h["Range"] = fmt.Sprintf("bytes=%d-", int(size)+rapid.IntRange(0, 10).Draw(rt, "range beyond"))
	case 2:
		h["If-None-Match"] = `"` + fmt.Sprint(item["sha256"]) + `"`
	case 3:
		h["If-Match"] = rapid.SampledFrom([]string{`"0"`, `"` + fmt.Sprint(item["sha256"]) + `"`}).Draw(rt, "if-match")
	case 4:
		h["Range"] = "bytes=0-0,2-3"
	}
	method := rapid.SampledFrom([]string{"GET", "HEAD"}).Draw(rt, "method")
	res := pb.a.do(req{Method: method, Path: path, Header: h})
	pb.sent++
	if res.Status >= 500 || res.Status == 0 {
		rt.Fatalf("%s %s %v: %d %s", method, path, h, res.Status, res.Body)
	}
	id := map[string]string{"GET": "downloadFile", "HEAD": "headFile"}[method]
	if pb.reached[id] == nil {
		pb.reached[id] = map[int]bool{}
	}
	pb.reached[id][res.Status] = true
}

// resolveLink evaluates a link's runtime expression; ok is false when it
// names nothing (a null member, an empty list, an absent parameter).
func resolveLink(expr string, doc any, pathVals map[string]string, query url.Values) (any, bool) {
	switch {
	case strings.HasPrefix(expr, "$request.path."):
		v, ok := pathVals[strings.TrimPrefix(expr, "$request.path.")]
		return v, ok
	case strings.HasPrefix(expr, "$request.query."):
		name := strings.TrimPrefix(expr, "$request.query.")
		return query.Get(name), query.Has(name)
	case strings.HasPrefix(expr, "$response.body#/"):
		cur := doc
		for _, tok := range strings.Split(strings.TrimPrefix(expr, "$response.body#/"), "/") {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i >= len(c) {
					return nil, false
				}
				cur = c[i]
			default:
				return nil, false
			}
		}
		return cur, cur != nil
	}
	return nil, false
}

// param draws a parameter's value: its example, a value of its schema, or
// (rarely) one that breaks it; ok is false to leave it out.
func (pb *propertyRun) param(rt *rapid.T, op string, p *openapi3.Parameter) (any, bool) {
	label := p.In + " " + p.Name
	if pb.byExample && rapid.IntRange(0, 19).Draw(rt, label+" as its example") > 0 {
		return p.Example, p.Example != nil
	}
	if !p.Required && rapid.IntRange(0, 2).Draw(rt, label+" sent") > 0 {
		return nil, false
	}
	switch rapid.IntRange(0, 9).Draw(rt, label+" kind") {
	case 0:
		if p.In == "path" {
			return "x" + strings.Repeat("y", rapid.IntRange(0, 300).Draw(rt, label+" long")), true
		}
		if rapid.Bool().Draw(rt, label+" left out") {
			return nil, false
		}
		broken := []string{"", "-1", "00", "not valid", "%zz", "\u00e9", "\x00"}
		if p.In == "header" {
			broken = broken[:5] // what a header field can carry
		}
		return rapid.SampledFrom(broken).Draw(rt, label+" broken"), true
	case 1, 2, 3, 4, 5:
		if p.Example != nil {
			return p.Example, true
		}
	}
	if p.In == "header" && p.Schema.Value.Pattern == "" && len(p.Schema.Value.Enum) == 0 {
		return rapid.StringMatching(`^[!-~]{1,40}$`).Draw(rt, label), true // what a header field can carry
	}
	return drawValue(rt, p.Schema, label, 0), true
}

// body draws a request body: its example, a value of its schema, or a
// broken one; it sets Content-Type (and keeps Idempotency-Key and
// Repr-Digest consistent with the body most of the time).
func (pb *propertyRun) body(rt *rapid.T, op *openapi3.Operation, h map[string]string, pathVals map[string]string) []byte {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	content := op.RequestBody.Value.Content
	medias := make([]string, 0, len(content))
	for m := range content {
		medias = append(medias, m)
	}
	sort.Strings(medias)
	media := rapid.SampledFrom(medias).Draw(rt, "media type")
	mt := content[media]
	var b []byte
	kind := rapid.IntRange(0, 9).Draw(rt, "body kind")
	if pb.byExample {
		// The example (1), near it (3: one member changed; for a file,
		// other bytes: 6), or anything.
		kind = rapid.SampledFrom([]int{1, 1, 1, 1, 3, 3, 3, 6, kind, kind}).Draw(rt, "body near its example")
	}
	switch {
	case !op.RequestBody.Value.Required && kind == 9:
		return nil
	case media != "application/json":
		b = pb.binary(rt, mt, kind)
		if media == "*/*" {
			media = rapid.SampledFrom([]string{"text/plain", "application/pdf", "image/png"}).Draw(rt, "file type")
		}
	case kind == 0:
		b = []byte(rapid.SampledFrom([]string{"", "{", "[]", "null", `{"a":1,"a":2}`, "\xff\xfe", `"text"`,
			`{"x":"` + strings.Repeat("x", 1<<20) + `"}`, `{"x":"` + strings.Repeat("x", 5000) + `"}`}).Draw(rt, "broken body"))
	case kind >= 1 && kind <= 3 && len(mt.Examples) > 0:
		b = mustJSON(pb.a.t, pb.example(rt, mt, kind == 3))
	case rapid.IntRange(0, 5).Draw(rt, "oversized body") == 0:
		b = []byte(`{"x":"` + strings.Repeat("x", 1<<20) + `"}`)
	}
	if b == nil {
		v := drawValue(rt, mt.Schema, "body", 0)
		if m, ok := v.(map[string]any); ok && rapid.IntRange(0, 3).Draw(rt, "ids from the path") > 0 {
			// The path's ids, as a client keeps them consistent.
			for member, param := range map[string]string{"id": "recordId", "restaurantId": "restaurantId", "mutationId": "mutationId"} {
				if v, ok := pathVals[param]; ok {
					m[member] = v
				}
			}
			if v, ok := pathVals["deliveryId"]; ok {
				m["id"] = v
			}
		}
		b = mustJSON(pb.a.t, v)
	}
	if len(b) > 64<<10 && h["Authorization"] == "" {
		// Refused unread (401): the service may close the connection
		// while the client still writes, which is no answer to check.
		b = b[:64<<10]
	}
	h["Content-Type"] = media
	if _, ok := h["Repr-Digest"]; ok && rapid.IntRange(0, 3).Draw(rt, "digest of the body") > 0 {
		h["Repr-Digest"] = examples.Digest(b)
	}
	if _, ok := h["Idempotency-Key"]; ok && rapid.IntRange(0, 3).Draw(rt, "key of the path") > 0 {
		h["Idempotency-Key"] = pathVals["mutationId"]
	}
	return b
}

// example is one of the body's examples; near, one of its members drawn
// anew from its schema (the same request with one thing changed: a
// conflict for a write the demo made, or a refusal).
func (pb *propertyRun) example(rt *rapid.T, mt *openapi3.MediaType, near bool) any {
	names := make([]string, 0, len(mt.Examples))
	for n := range mt.Examples {
		names = append(names, n)
	}
	sort.Strings(names)
	v := mt.Examples[rapid.SampledFrom(names).Draw(rt, "example")].Value.Value
	m, ok := v.(map[string]any)
	if !near || !ok {
		return v
	}
	out := map[string]any{}
	members := make([]string, 0, len(m))
	for k, x := range m {
		out[k] = x
		members = append(members, k)
	}
	sort.Strings(members)
	k := rapid.SampledFrom(members).Draw(rt, "member changed")
	schema := mt.Schema
	for _, alt := range append(openapi3.SchemaRefs{schema}, schema.Value.OneOf...) {
		if p := alt.Value.Properties[k]; p != nil {
			out[k] = drawValue(rt, p, "changed "+k, 1)
			break
		}
	}
	return out
}

// binary is a file's bytes: the example, or random ones.
func (pb *propertyRun) binary(rt *rapid.T, mt *openapi3.MediaType, kind int) []byte {
	if kind < 7 {
		for _, e := range mt.Examples {
			var b []byte
			if s, ok := e.Value.Value.(string); ok {
				b = []byte(s)
			}
			if b != nil && kind == 6 {
				// The same kind of file with other bytes.
				b = append(b, rapid.SliceOfN(rapid.Byte(), 1, 16).Draw(rt, "more bytes")...)
			}
			if b != nil {
				return b
			}
		}
	}
	if kind < 7 && len(mt.Examples) == 0 {
		// A photograph: the example delivery's (the document cannot
		// carry it), perhaps with more bytes.
		b := examples.Photo()
		if kind == 6 {
			b = append(slices.Clone(b), rapid.SliceOfN(rapid.Byte(), 1, 16).Draw(rt, "more bytes")...)
		}
		return b
	}
	return rapid.SliceOfN(rapid.Byte(), 0, 2048).Draw(rt, "file bytes")
}

// drawValue draws a value of a schema of the document: its const or enum,
// a member of a union, an object with its required members and some
// optional ones, strings matching their pattern within their length, and
// numbers within their bounds. Conditionals (if/then) and `not` are left
// to chance: a value they refuse is a request the document calls invalid,
// which the contract check holds the service to refusing.
func drawValue(rt *rapid.T, s *openapi3.SchemaRef, label string, depth int) any {
	if s == nil || s.Value == nil {
		return nil
	}
	v := s.Value
	switch {
	case v.Const != nil:
		return v.Const
	case len(v.Enum) > 0:
		return rapid.SampledFrom(v.Enum).Draw(rt, label)
	case len(v.OneOf) > 0:
		return drawValue(rt, rapid.SampledFrom(v.OneOf).Draw(rt, label+" member"), label, depth+1)
	case len(v.AnyOf) > 0:
		return drawValue(rt, rapid.SampledFrom(v.AnyOf).Draw(rt, label+" member"), label, depth+1)
	case len(v.AllOf) == 1 && len(v.Properties) == 0:
		return drawValue(rt, v.AllOf[0], label, depth+1)
	}
	types := []string{"object"}
	if v.Type != nil && len(*v.Type) > 0 {
		types = *v.Type
	}
	if v.Not != nil && v.Not.Value != nil && v.Not.Value.Type != nil {
		types = slices.DeleteFunc(slices.Clone(types), func(t string) bool { return v.Not.Value.Type.Is(t) })
	}
	if len(types) == 0 {
		return nil
	}
	switch rapid.SampledFrom(types).Draw(rt, label+" type") {
	case "null":
		return nil
	case "boolean":
		return rapid.Bool().Draw(rt, label)
	case "integer":
		lo, hi := bound(v.Min, -1000), bound(v.Max, 1_000_000)
		return rapid.Int64Range(int64(lo), int64(hi)).Draw(rt, label)
	case "number":
		return rapid.Float64Range(bound(v.Min, -1e6), bound(v.Max, 1e6)).Draw(rt, label)
	case "string":
		return drawString(rt, v, label)
	case "array":
		if depth > 6 {
			return []any{}
		}
		n := rapid.IntRange(int(v.MinItems), min(int(v.MinItems)+3, maxOr(v.MaxItems, 3))).Draw(rt, label+" items")
		out := []any{}
		for i := 0; i < n; i++ {
			item := drawValue(rt, v.Items, label+"[]", depth+1)
			if v.UniqueItems && slices.ContainsFunc(out, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(item) }) {
				continue
			}
			out = append(out, item)
		}
		return out
	}
	out := map[string]any{}
	if depth > 6 {
		return out
	}
	names := make([]string, 0, len(v.Properties))
	for n := range v.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if slices.Contains(v.Required, n) || rapid.Bool().Draw(rt, label+"."+n+" sent") {
			out[n] = drawValue(rt, v.Properties[n], label+"."+n, depth+1)
		}
	}
	return out
}

func drawString(rt *rapid.T, v *openapi3.Schema, label string) string {
	hi := maxOr(v.MaxLength, 40)
	lo := int(v.MinLength)
	if v.Pattern != "" {
		return rapid.StringMatching(v.Pattern).Filter(func(s string) bool {
			n := len([]rune(s))
			return n >= lo && n <= hi
		}).Draw(rt, label)
	}
	return rapid.StringN(lo, min(hi, lo+40), -1).Draw(rt, label)
}

func bound(b *float64, def float64) float64 {
	if b == nil || math.Abs(*b) > 1e15 {
		return def
	}
	return *b
}

func maxOr(m *uint64, def int) int {
	if m == nil || *m > uint64(def) {
		return def
	}
	return int(*m)
}

// unreached are the statuses an operation declares that this run does not
// reach, each with the test that does (by status, or by operationId and
// status).
var unreached = map[string]string{
	"500":                   "unexpected failures, never on purpose: TestPanicIsOpaque500",
	"503":                   "outages of the database or the file store: TestDatabaseUnavailableIs503, TestHealthReadyDatabaseDown, TestUnwritableFileStorageIs503",
	"429":                   "budgets: the run's key has one no draw spends (TestRateLimitPerKey, TestRateLimitFailedAuthPerIP, TestSignedURLRateLimitedPerIP, TestMCPRateLimit), and a daily upload quota no draw spends (TestUploadQuota)",
	"408":                   "an upload too slow or stalled, which takes seconds of a client sending nothing or a byte now and then: TestUploadIdleTimeout, TestTricklingUploadsFreeTheirSlots",
	"431":                   "header sections over 64 KiB are answered by serve's listener before routing, which the in-process server of this run does not have: TestUnparseableRequestsGetProblems",
	"uploadRecordAsset 413": "a file over FOODSAFE_MAX_ASSET_BYTES (50 MiB by default) is too large to send per draw: TestLargeUploads",
	"putDeliveryImage 413":  "as an asset: TestLargeUploads, TestDeliveryImages",
	// Other bytes under an image id the run stored: the draws reach it
	// when an upload of the example image and one of other bytes fall
	// in one case, which the seed's draws no longer place together since
	// ingestBatch joined the operations.
	"putDeliveryImage 409": "other bytes for a stored image id: TestDeliveryImages",
	// One typed ingest of 24 is drawn per case, so a body over the limit
	// reaches each rarely; they are ingestSnapshot's handler with the
	// collection written in the path.
	"ingest<Collection>Snapshot 413": "the body limit of ingestSnapshot, whose handler they share: TestIngestRequestErrors/a_body_over_the_limit_is_413",
	// Most draws of a JSON body are its example or near it, so a body
	// over the limit is drawn for an operation in about half the runs:
	// each is reached by a test of its own.
	"ingestSnapshot 413":      "TestIngestRequestErrors/a_body_over_the_limit_is_413",
	"putDelivery 413":         "TestDeliveryIngestRejects",
	"createMobileSession 413": "TestMobileSessions/a_body_over_the_limit_is_413",
	"mcp 413":                 "TestMCPHTTPFailures (too large)",
	"ingestBatch 413":         "a batch over FOODSAFE_MAX_BATCH_BYTES (4 MiB by default) is too large to send per draw: TestBatchMalformed/over_the_byte_limit",
	"mcp 404":                 "a JSON-RPC error for an unknown method needs protocol 2026-07-28's _meta and headers together: TestMCPUnknownMethodIsMethodNotFound",
	// A 409 needs the record to name another file than the bytes drawn
	// (or none) after an ingest of it in the same case: a few seeds of 50
	// cases draw it, others not.
	"uploadRecordAsset 409": "an upload for a record that names another file or none: TestAssetPendingToUploaded",
	"downloadFile 404":      "a validly signed URL of a file no longer stored, or any download where files live in object storage (presigned URLs instead): no request of this run can make either",
	"headFile 404":          "as downloadFile's",
	// An upload resource is named by the Location header of the upload
	// that created it (with its 104), which is no link the run follows,
	// and created by a request the run draws only as a single PUT
	// (Upload-Draft-Interop-Version has no example).
	"headUpload 204":        "HEAD on an upload resource: TestResumableUploadResource, TestResumableAssetUpload",
	"resumeUpload 200":      "the PATCH that completes an upload: TestResumableAssetUpload, TestResumableDeliveryImage",
	"resumeUpload 204":      "a PATCH with Upload-Complete: ?0: TestResumableUploadResource",
	"resumeUpload 409":      "a PATCH from another offset: TestResumableUploadResource",
	"resumeUpload 413":      "a PATCH past FOODSAFE_MAX_ASSET_BYTES: TestResumableUploadResource",
	"cancelUpload 204":      "DELETE on an upload resource: TestResumableUploadResource",
	"uploadRecordAsset 201": "a resumable asset upload created with Upload-Complete: ?0: TestResumableUploadResource",
	"putDeliveryImage 201":  "a resumable image upload created with Upload-Complete: ?0: TestResumableDeliveryImage",
}

// requireReached fails for a declared status neither reached nor
// justified.
func (pb *propertyRun) requireReached(t *testing.T) {
	var missing []string
	for _, o := range pb.ops {
		id := o.op.OperationID
		if typedIngest.MatchString(id) {
			id = "ingest<Collection>Snapshot"
		}
		for code := range o.op.Responses.Map() {
			status, err := strconv.Atoi(code)
			require.NoError(t, err)
			if pb.reached[id][status] || unreached[code] != "" || unreached[id+" "+code] != "" {
				continue
			}
			missing = append(missing, id+" "+code)
		}
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	require.Empty(t, missing, "declared statuses neither reached nor justified")
}
