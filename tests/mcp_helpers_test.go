package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// The MCP tests drive POST /mcp with the go-sdk's own client over HTTP.
// Its transport (mcpWire) adds the bearer credential and holds every
// exchange to the OpenAPI document, like app.do does for REST.

// Protocol revisions the tests speak: the SDK's newest (no handshake) and
// the two previous ones (initialize).
const (
	rev2026 = "2026-07-28"
	rev1125 = "2025-11-25"
	rev0618 = "2025-06-18"
)

// mcpWire is the client's HTTP transport: bearer header, contract check,
// and a record of what came back (the SDK client hides statuses and
// headers from its errors).
type mcpWire struct {
	a   *app
	key string

	mu        sync.Mutex
	exchanges []exchange
}

func (w *mcpWire) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if w.key != "" {
		r.Header.Set("Authorization", "Bearer "+w.key)
	}
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := w.a.srv.Client().Transport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(rb))
	ex := exchange{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header, Body: body,
		Status: res.StatusCode, RHeader: res.Header, RBody: rb}
	w.a.checkContract(ex)
	w.mu.Lock()
	w.exchanges = append(w.exchanges, ex)
	w.mu.Unlock()
	return res, nil
}

// last is the most recent exchange.
func (w *mcpWire) last() exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.exchanges[len(w.exchanges)-1]
}

// mcpSession is a connected go-sdk client session and its wire. t is the
// test (or subtest) whose goroutine uses it.
type mcpSession struct {
	*mcp.ClientSession
	t    testing.TB
	wire *mcpWire
	// schemas are the compiled output schemas of tools/list, by tool.
	schemas map[string]*jsonschema.Schema
}

// mcpConnect connects with the credential at a protocol revision and
// checks that the revision is the one negotiated: a client that silently
// fell back to another proves nothing about the one asked for.
func (a *app) mcpConnect(t testing.TB, key, revision string) *mcpSession {
	t.Helper()
	s, err := a.mcpDial(key, revision)
	require.NoError(t, err)
	require.Equal(t, revision, s.InitializeResult().ProtocolVersion, "negotiated revision")
	t.Cleanup(func() { _ = s.Close() })
	s.t = t
	return s
}

// as is the session for use in subtest t.
func (s *mcpSession) as(t testing.TB) *mcpSession {
	c := *s
	c.t = t
	return &c
}

// mcpDial is mcpConnect that returns the connection error.
func (a *app) mcpDial(key, revision string) (*mcpSession, error) {
	w := &mcpWire{a: a, key: key}
	c := mcp.NewClient(&mcp.Implementation{Name: "foodsafe-tests", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: a.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: w}},
		&mcp.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		return nil, err
	}
	return &mcpSession{ClientSession: cs, t: a.t, wire: w, schemas: map[string]*jsonschema.Schema{}}, nil
}

// toolResult is a tools/call result as the tests read it.
type toolResult struct {
	IsError    bool
	Text       string
	Structured json.RawMessage
	Raw        *mcp.CallToolResult
}

// call calls a tool that must answer (success or tool error); a protocol
// or transport error fails the test.
func (s *mcpSession) call(tool string, args any) toolResult {
	s.t.Helper()
	r, err := s.callErr(tool, args)
	require.NoError(s.t, err, "calling %s", tool)
	return r
}

func (s *mcpSession) callErr(tool string, args any) (toolResult, error) {
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return toolResult{}, err
	}
	out := toolResult{IsError: res.IsError, Raw: res}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	out.Text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		if out.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			return toolResult{}, err
		}
	}
	return out, nil
}

// ok is call for a tool that must succeed; it returns the structured
// output after checking it against the tool's own output schema.
func (s *mcpSession) ok(tool string, args any) json.RawMessage {
	s.t.Helper()
	r := s.call(tool, args)
	require.False(s.t, r.IsError, "%s failed: %s", tool, r.Text)
	require.NotEmpty(s.t, r.Structured, "%s: structured output", tool)
	require.NotEmpty(s.t, r.Text, "%s: text rendering", tool)
	s.requireOutputSchema(tool, r.Structured)
	return r.Structured
}

// toolErr is call for a tool that must fail; it returns the error text.
func (s *mcpSession) toolErr(tool string, args any) string {
	s.t.Helper()
	r := s.call(tool, args)
	require.True(s.t, r.IsError, "%s should fail; got %s", tool, r.Structured)
	require.Empty(s.t, r.Structured, "a failed tool sends no data")
	return r.Text
}

// toolNames lists the tools tools/list shows.
func (s *mcpSession) toolNames() []string {
	s.t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	require.NoError(s.t, err)
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names
}

// requireOutputSchema validates a structured output against the output
// schema the server lists for the tool (the SDK does not, on a server
// whose tools decode their own arguments).
func (s *mcpSession) requireOutputSchema(tool string, out json.RawMessage) {
	s.t.Helper()
	if len(s.schemas) == 0 {
		res, err := s.ListTools(context.Background(), nil)
		require.NoError(s.t, err)
		for _, t := range res.Tools {
			raw, err := json.Marshal(t.OutputSchema)
			require.NoError(s.t, err)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			require.NoError(s.t, err)
			c := jsonschema.NewCompiler()
			require.NoError(s.t, c.AddResource("tool.json", doc))
			if s.schemas[t.Name], err = c.Compile("tool.json"); err != nil {
				require.NoError(s.t, err, t.Name)
			}
		}
	}
	sch, ok := s.schemas[tool]
	require.True(s.t, ok, "tool %s is listed", tool)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	require.NoError(s.t, err)
	require.NoError(s.t, sch.Validate(v), "%s output against its schema: %s", tool, out)
}

// restBody is a REST GET that must succeed, as its body.
func (a *app) restBody(key, path string) []byte {
	a.t.Helper()
	r := a.getAs(key, path)
	require.Equal(a.t, http.StatusOK, r.Status, "%s: %s", path, r.Body)
	return r.Body
}

// restDetail is the problem detail of a REST GET that must fail.
func (a *app) restDetail(key, path string, status int) string {
	a.t.Helper()
	r := a.getAs(key, path)
	require.Equal(a.t, status, r.Status, "%s: %s", path, r.Body)
	return r.problem(a.t).Detail
}
