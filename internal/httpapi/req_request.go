package httpapi

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
)

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

// restParams reads a REST request's path and query string.
type restParams struct{ c *gin.Context }

func (p restParams) path(name string) string { return p.c.Param(name) }

func (p restParams) query(name string) (string, bool, error) { return queryOnce(p.c, name) }

// restRequest is the request of an operation served over REST.
func (a *API) restRequest(c *gin.Context) request {
	return request{principal: principal(c), params: restParams{c}, baseURL: a.baseURL(c), defaultLimit: restDefaultLimit}
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
