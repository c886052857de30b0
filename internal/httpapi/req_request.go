package httpapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
)

// The reads of the service are operations that know nothing of their face:
// a REST route (serve, http_rest.go) and an MCP tool (http_mcp_tools.go)
// build the same request. An operation takes its parameters as the raw text
// a client sent, so both faces parse them with the same code and refuse
// them with the same messages, and it returns the wire struct both faces
// send.

// params is where an operation reads its parameters: a REST request's path
// and query string, or an MCP tool call's arguments.
type params interface {
	// path returns a parameter that is always present (a path segment in
	// REST, a required argument in MCP).
	path(name string) string
	// query returns an optional parameter, whether it was given, and an
	// error when it cannot be read (given twice).
	query(name string) (string, bool, error)
}

// request is one call of an operation.
type request struct {
	principal *auth.Principal
	params    params
	// baseURL prefixes signed download URLs.
	baseURL string
	// defaultLimit is the page size when the client gives none; each face
	// has its own (MCP keeps results small for a model's context).
	defaultLimit int
}

// operation is a read offered by a route (and, when a tool names the
// route, by MCP). out is the type run returns: the tool's output schema is
// generated from it.
type operation struct {
	run func(ctx context.Context, r request) (any, error)
	out reflect.Type
}

// op erases an operation's result type for the route table, keeping it
// for schema generation.
func op[Out any](f func(ctx context.Context, r request) (Out, error)) operation {
	return operation{
		run: func(ctx context.Context, r request) (any, error) { return f(ctx, r) },
		out: reflect.TypeFor[Out](),
	}
}

// pathEcho checks that a body member, when present as a string, repeats
// the path parameter it must equal.
func pathEcho(doc map[string]any, member, want, param string) []apperr.FieldError {
	if v, ok := doc[member].(string); ok && v != want {
		return []apperr.FieldError{{Pointer: "/" + member, Detail: "must equal the " + param + " in the path"}}
	}
	return nil
}

// remarshal turns a validated generic document into a typed struct.
func remarshal(doc any, v any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// baseURL prefixes the signed download URLs of the filesystem store:
// FOODSAFE_BASE_URL, or this server's own address, as the connection
// reached it. Never the request's Host, for the reason problemType gives:
// a caller must not choose the host of a URL another client may be handed
// (a shared cache, a link copied into a report), which would send that
// client's download, and the URL's signature, wherever the caller chose.
func (a *API) baseURL(c *gin.Context) string {
	local, _ := c.Request.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return baseURL(a.cfg.BaseURL, c.Request.TLS != nil, local)
}

// baseURL is the configured base URL, else http(s):// and the address the
// connection reached on this server (an address of the server's, whatever
// the request says), else localhost.
func baseURL(configured string, tls bool, local net.Addr) string {
	if configured != "" {
		return configured
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host := "localhost"
	if local != nil {
		host = local.String()
	}
	return scheme + "://" + host
}
