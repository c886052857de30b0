package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Every argument and every output field of every tool is described, and
// every tool is the face of a partner read of the route table.
func TestMCPSchemasDescribeEveryField(t *testing.T) {
	tools, err := buildTools((&API{}).routes(), (&API{}).localTools())
	require.NoError(t, err)
	require.Len(t, tools, 12)
	for _, tl := range tools {
		require.NotEmpty(t, tl.description, tl.name)
		if tl.route != describeCollection { // the one tool that reads no records
			require.Contains(t, tl.description, "does not prove that nothing happened", tl.name)
		}
		require.True(t, tl.tool.Annotations.ReadOnlyHint, tl.name)
		for kind, s := range map[string]*jsonschema.Schema{"input": tl.tool.InputSchema.(*jsonschema.Schema),
			"output": tl.tool.OutputSchema.(*jsonschema.Schema)} {
			require.Equal(t, "object", s.Type, "%s %s", tl.name, kind)
			requireDescribed(t, tl.name+" "+kind, s)
		}
		out := tl.tool.OutputSchema.(*jsonschema.Schema)
		if _, paged := out.Properties["nextCursor"]; paged {
			require.Contains(t, tl.description, "cursor set to nextCursor", "%s says how to page", tl.name)
		} else {
			require.Contains(t, tl.description, "no pages", "%s says it has no pages", tl.name)
		}
	}
}

func requireDescribed(t *testing.T, where string, s *jsonschema.Schema) {
	t.Helper()
	for name, p := range s.Properties {
		require.NotEmpty(t, p.Description, "%s: property %s has no description", where, name)
		require.NotContains(t, p.Description, "{", "%s: property %s: a placeholder tagProse does not fill", where, name)
		requireDescribed(t, where+"."+name, p)
	}
	if s.Items != nil {
		requireDescribed(t, where+"[]", s.Items)
	}
}

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A panic inside a tool runs on the SDK's goroutine, beyond gin's
// recoverer: it becomes a tool error naming the request id, the stack is
// logged, and the server goes on answering.
func TestMCPToolPanicIsAToolError(t *testing.T) {
	logs := &logBuffer{}
	a := &API{cfg: config.Config{MaxBodyBytes: 1 << 20}, log: slog.New(slog.NewJSONHandler(logs, nil))}
	explode := mcpTool{name: "explode", title: "Explodes", args: reflect.TypeFor[noArgs](), description: "Panics.",
		op: op(func(context.Context, request) (List[wire.RestaurantGrant], error) { panic("boom") })}
	fine := mcpTool{name: "fine", title: "Answers", args: reflect.TypeFor[noArgs](), description: "Answers.", op: op(a.restaurantsList)}
	for _, tl := range []*mcpTool{&explode, &fine} {
		require.NoError(t, tl.define())
	}
	a.mcpTools = []mcpTool{explode, fine}
	a.mcpHandler = a.newMCPHandler()
	p := auth.NewPrincipal(1, "k1", []auth.Grant{{RestaurantID: "r1", Scopes: []string{"areas:read"}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := &mcpCall{principal: p, groups: toolGroupsOf(p), requestID: "req-1", baseURL: "http://x"}
		a.mcpHandler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mcpCallKey{}, call)))
	}))
	defer srv.Close()

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "explode"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, internalDetail+" (requestId req-1)", res.Content[0].(*mcp.TextContent).Text)
	require.Contains(t, logs.String(), `"msg":"panic"`)
	require.Contains(t, logs.String(), `"panic":"boom"`)
	require.Contains(t, logs.String(), `"request_id":"req-1"`)
	require.Contains(t, logs.String(), "goroutine", "the stack is logged")

	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fine"})
	require.NoError(t, err)
	require.False(t, res.IsError, "the server goes on")
}

// JSON-RPC errors come back with credentials redacted; results (a tool's
// records, data as stored) and anything that is not one JSON-RPC answer
// pass untouched.
func TestRedactedRPCError(t *testing.T) {
	t.Parallel()
	const key = "fsk_aaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	out, ok := redactedRPCError([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"` + key + `\""}}`))
	require.True(t, ok)
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"fsk_aaaaaaaaaaaaaaaa.[redacted]\""}}`, string(out))
	for _, b := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"data":[{"note":"` + key + `"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`,
		`{"jsonrpc":"2.0","id":1,"error":`,
		`not JSON`,
	} {
		_, ok := redactedRPCError([]byte(b))
		require.False(t, ok, b)
	}
}

// Every record a tool sends names its collection from an enum of the 24,
// the member that says which schema its data follows, and describe_collection
// gives that schema for each of them; a feed item's stream is one of the
// 24 or deliveries.
func TestMCPRecordsTyped(t *testing.T) {
	tools, err := buildTools((&API{}).routes(), (&API{}).localTools())
	require.NoError(t, err)
	names := collectionNames()
	require.Len(t, names, 24)
	envelopes := map[string]int{}
	for _, tl := range tools {
		var walk func(s *jsonschema.Schema)
		walk = func(s *jsonschema.Schema) {
			if s == nil {
				return
			}
			if _, ok := s.Properties["mutationId"]; ok {
				envelopes[tl.name]++
				require.Equal(t, names, s.Properties["collection"].Enum, tl.name)
				require.Contains(t, s.Properties["data"].Description, "describe_collection", tl.name)
			}
			for _, p := range s.Properties {
				walk(p)
			}
			walk(s.Items)
		}
		walk(tl.tool.OutputSchema.(*jsonschema.Schema))
	}
	require.Equal(t, map[string]int{"walk_records": 1, "get_record": 1, "walk_all_records": 1}, envelopes)

	var feed *jsonschema.Schema
	for _, tl := range tools {
		if tl.name == "walk_all_records" {
			feed = tl.tool.OutputSchema.(*jsonschema.Schema).Properties["data"].Items
		}
	}
	require.Equal(t, append(names, "deliveries"), feed.Properties["stream"].Enum)
	require.Len(t, feed.OneOf, 2, "a delivery item carries delivery, a record item carries record")
}
