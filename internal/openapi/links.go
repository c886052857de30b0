package openapi

import (
	"sort"

	"github.com/getkin/kin-openapi/openapi3"
)

// Link is an OpenAPI link of an operation's success response: an
// operation a client (or a stateful tester) calls next, by operationId,
// with parameters taken from this request or response by runtime
// expressions ($request.path.restaurantId, $response.body#/nextCursor).
// Parameters the link does not give are the client's choice.
type Link struct {
	Name        string
	OperationID string
	Description string
	Parameters  map[string]string
}

// FromBody is the runtime expression of a member of the response body,
// by JSON Pointer.
func FromBody(pointer string) string { return "$response.body#" + pointer }

// FromPath is the runtime expression of a path parameter of the request.
func FromPath(name string) string { return "$request.path." + name }

// FromQuery is the runtime expression of a query parameter of the request.
func FromQuery(name string) string { return "$request.query." + name }

// SamePath passes path parameters of the request on unchanged.
func SamePath(names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = FromPath(n)
	}
	return m
}

// With is m with more parameters (name, expression pairs).
func With(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func links(ls []Link) openapi3.Links {
	if len(ls) == 0 {
		return nil
	}
	out := openapi3.Links{}
	for _, l := range ls {
		params := map[string]any{}
		names := make([]string, 0, len(l.Parameters))
		for n := range l.Parameters {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			params[n] = l.Parameters[n]
		}
		out[l.Name] = &openapi3.LinkRef{Value: &openapi3.Link{OperationID: l.OperationID, Description: l.Description, Parameters: params}}
	}
	return out
}
