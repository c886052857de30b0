package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// contract holds every exchange of the test suite to the OpenAPI document
// the service serves: kin-openapi finds the operation and checks
// parameters, security, status and headers; JSON bodies are checked with
// the document's own schemas, compiled once.
type contract struct {
	doc       *openapi3.T
	router    routers.Router
	compileMu sync.Mutex // jsonschema.Compiler is not safe for concurrent use
	compiler  *jsonschema.Compiler
	compiled  sync.Map // component ref -> *jsonschema.Schema
}

const contractBase = "https://contract.test/openapi.json"

var (
	contractOnce sync.Once
	theContract  *contract
	contractErr  error
)

func loadContract() (*contract, error) {
	contractOnce.Do(func() {
		theContract, contractErr = newContract()
	})
	return theContract, contractErr
}

func newContract() (*contract, error) {
	set, err := validate.Load()
	if err != nil {
		return nil, err
	}
	doc, err := httpapi.Document(set, openapi.Info{Version: "test", Server: "/"})
	if err != nil {
		return nil, err
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	docValue, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(contractBase, docValue); err != nil {
		return nil, err
	}
	return &contract{doc: doc, router: router, compiler: c}, nil
}

// schemaFor compiles a component schema of the document once.
func (ct *contract) schemaFor(ref string) (*jsonschema.Schema, error) {
	if s, ok := ct.compiled.Load(ref); ok {
		return s.(*jsonschema.Schema), nil
	}
	ct.compileMu.Lock()
	defer ct.compileMu.Unlock()
	s, err := ct.compiler.Compile(contractBase + ref)
	if err != nil {
		return nil, err
	}
	ct.compiled.Store(ref, s)
	return s, nil
}

func (ct *contract) validateJSON(ref string, body []byte) error {
	s, err := ct.schemaFor(ref)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return s.Validate(v)
}

// exchange is one request and its response, as the client saw them.
type exchange struct {
	Method  string
	URL     string // path and query
	Header  http.Header
	Body    []byte
	Status  int
	RHeader http.Header
	RBody   []byte
}

// check returns why the exchange breaks the document, or nil.
func (ct *contract) check(ex exchange) error {
	ctx := context.Background()
	u, err := url.Parse(ex.URL)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(ex.Method, "http://contract.test"+u.EscapedPath()+queryPart(u), bytes.NewReader(ex.Body))
	if err != nil {
		return err
	}
	req.Header = ex.Header.Clone()
	route, params, err := ct.router.FindRoute(req)
	head := false
	if err != nil && ex.Method == http.MethodHead {
		// Every GET answers HEAD (RFC 9110 9.1) without a document entry of
		// its own: the GET operation's statuses and headers hold, no body.
		req.Method, head = http.MethodGet, true
		if route, params, err = ct.router.FindRoute(req); err == nil && len(ex.RBody) > 0 {
			return fmt.Errorf("HEAD %s answered a body", ex.URL)
		}
	}
	if err != nil {
		// Not an operation of the document: only a problem may answer.
		if !slices.Contains([]int{400, 404, 405, 429}, ex.Status) {
			return fmt.Errorf("%s %s is not documented, yet answered %d", ex.Method, ex.URL, ex.Status)
		}
		return ct.problemBody(ex)
	}

	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
	reqErr := ct.requestParams(route, params, req)
	if reqErr == nil {
		reqErr = ct.requestBody(route.Operation, ex)
	}
	if reqErr != nil && itemsRefused(route.Operation, ex) {
		reqErr = nil
	}
	if reqErr != nil && (ex.Status < 400 || ex.Status >= 500) {
		return fmt.Errorf("the document calls this request invalid (%v) but the service answered %d", reqErr, ex.Status)
	}

	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.Status, Header: ex.RHeader,
		Body:    io.NopCloser(bytes.NewReader(ex.RBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return fmt.Errorf("response %d to %s %s: %w", ex.Status, ex.Method, ex.URL, err)
	}
	if head {
		return nil
	}
	return ct.responseBody(route.Operation, ex)
}

// itemsRefused: a batch ingest the document calls invalid for an item's
// own body (it types each item as its single PUT's body) is answered 200,
// with that item's 4xx inside: the service judges items one by one, and
// one bad snapshot never blocks the others. Such an answer refuses at
// least one item.
func itemsRefused(op *openapi3.Operation, ex exchange) bool {
	if op.OperationID != "ingestBatch" || ex.Status != http.StatusOK {
		return false
	}
	var out struct{ Data []struct{ Status int } }
	if json.Unmarshal(ex.RBody, &out) != nil {
		return false
	}
	return slices.ContainsFunc(out.Data, func(d struct{ Status int }) bool { return d.Status >= 400 })
}

func queryPart(u *url.URL) string {
	if u.RawQuery == "" {
		return ""
	}
	return "?" + u.RawQuery
}

// requestParams checks security and every parameter against the document.
// (openapi3filter.ValidateRequest would do it too, but with a 3.1 document
// it compiles a JSON Schema per parameter per call, which doubles the
// suite's run time; the definitions and schemas used here are the same.)
func (ct *contract) requestParams(route *routers.Route, path map[string]string, req *http.Request) error {
	op := route.Operation
	if op.Security != nil && len(*op.Security) > 0 && !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer credential")
	}
	query := req.URL.Query()
	if _, err := url.ParseQuery(req.URL.RawQuery); err != nil {
		return fmt.Errorf("malformed query: %w", err)
	}
	for i, pr := range op.Parameters {
		p := pr.Value
		var vals []string
		switch p.In {
		case "path":
			vals = []string{path[p.Name]}
		case "query":
			vals = query[p.Name]
		case "header":
			vals = req.Header.Values(p.Name)
		}
		if len(vals) == 0 {
			if p.Required {
				return fmt.Errorf("%s parameter %q is required", p.In, p.Name)
			}
			continue
		}
		if len(vals) > 1 {
			return fmt.Errorf("%s parameter %q repeated", p.In, p.Name)
		}
		var v any = vals[0]
		if p.Schema.Value.Type.Is("integer") {
			n, err := strconv.ParseInt(vals[0], 10, 64)
			if err != nil {
				return fmt.Errorf("%s parameter %q is not an integer", p.In, p.Name)
			}
			v = json.Number(strconv.FormatInt(n, 10))
		}
		ref := pr.Ref + "/schema"
		if pr.Ref == "" {
			// A parameter written out in the operation (with an example of
			// its own).
			ref = fmt.Sprintf("#/paths/%s/%s/parameters/%d/schema", pointerToken(route.Path), strings.ToLower(route.Method), i)
		}
		s, err := ct.schemaFor(ref)
		if err != nil {
			return err
		}
		if err := s.Validate(v); err != nil {
			return fmt.Errorf("%s parameter %q: %w", p.In, p.Name, err)
		}
	}
	return nil
}

// pointerToken escapes a JSON Pointer reference token (RFC 6901).
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// requestBody validates a JSON request body against its documented schema.
func (ct *contract) requestBody(op *openapi3.Operation, ex exchange) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	content := op.RequestBody.Value.Content
	mt := content["application/json"] // exact: Get would match the */* of uploads
	if mt == nil || mt.Schema == nil {
		// Binary uploads: any bytes, of a media type the operation lists.
		got, _, _ := mime.ParseMediaType(ex.Header.Get("Content-Type"))
		if content["*/*"] == nil && content[got] == nil {
			return fmt.Errorf("content type %q is not documented", ex.Header.Get("Content-Type"))
		}
		return nil
	}
	if len(ex.Body) == 0 && !op.RequestBody.Value.Required {
		return nil
	}
	ct0, _, _ := mime.ParseMediaType(ex.Header.Get("Content-Type"))
	if ct0 != "application/json" {
		return fmt.Errorf("content type %q is not documented", ex.Header.Get("Content-Type"))
	}
	return ct.validateJSON(mt.Schema.Ref, ex.Body)
}

// responseBody checks the media type and, for JSON, the body.
func (ct *contract) responseBody(op *openapi3.Operation, ex exchange) error {
	rr := op.Responses.Status(ex.Status)
	if rr == nil {
		return fmt.Errorf("status %d is not documented for %s %s", ex.Status, ex.Method, ex.URL)
	}
	resp := rr.Value
	if len(resp.Content) == 0 {
		if len(ex.RBody) > 0 {
			return fmt.Errorf("status %d documents no body but got %d bytes", ex.Status, len(ex.RBody))
		}
		return nil
	}
	got, _, _ := mime.ParseMediaType(ex.RHeader.Get("Content-Type"))
	if resp.Content.Get("*/*") != nil {
		return nil
	}
	mt := resp.Content.Get(got)
	if mt == nil {
		return fmt.Errorf("content type %q is not documented for %d", ex.RHeader.Get("Content-Type"), ex.Status)
	}
	if ex.Method == http.MethodHead || mt.Schema == nil || mt.Schema.Ref == "" {
		return nil
	}
	if err := ct.validateJSON(mt.Schema.Ref, ex.RBody); err != nil {
		return fmt.Errorf("%d body of %s %s: %w\nbody: %.400s", ex.Status, ex.Method, ex.URL, err, ex.RBody)
	}
	return nil
}

func (ct *contract) problemBody(ex exchange) error {
	if ex.RHeader.Get("Content-Type") != "application/problem+json" {
		return fmt.Errorf("%d is not a problem document", ex.Status)
	}
	return ct.validateJSON("#/components/schemas/Problem", ex.RBody)
}

// checkContract is called by app.do for every exchange; it reports
// failures without stopping the goroutine (race tests call do in parallel).
func (a *app) checkContract(ex exchange) {
	if a.contractSkip(ex.URL) {
		return
	}
	ct, err := loadContract()
	if err == nil {
		err = ct.check(ex)
	}
	if err != nil {
		a.t.Errorf("contract: %v", err)
	}
}

// contractSkip excludes the routes a test registers for itself.
func (a *app) contractSkip(rawURL string) bool {
	for _, p := range a.extraRoutes {
		if strings.HasPrefix(rawURL, p) {
			return true
		}
	}
	return false
}
