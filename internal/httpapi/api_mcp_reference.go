package httpapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/foodsafe/foodsafe/internal/openapi"
)

// ToolDoc documents one MCP tool for the MCP reference
// (docs/reference/mcp-tools.md, make docs).
type ToolDoc struct {
	Name, Title, Description string
	// Route is the REST route the tool is the other face of, e.g.
	// "GET /v1/restaurants/{restaurantId}/deliveries"; empty for a tool
	// that is no route's face (describe_collection).
	Route string
	// Needs says who may call a tool that names no restaurant but is
	// listed only for some keys; empty otherwise.
	Needs string
	// Scopes are the scopes the tool needs on the restaurant it names
	// (none: any grant on it, or no restaurant argument).
	Scopes    []string
	Arguments []ToolArg
}

// ToolArg is one argument of a tool, from its input schema.
type ToolArg struct {
	Name, Type, Description string
	Required                bool
}

// Tools documents the MCP tools, sorted by name, from the definitions
// the server is built from (the tool and route tables).
func Tools() ([]ToolDoc, error) {
	api := &API{}
	routes := api.routes()
	tools, err := buildTools(routes, api.localTools())
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, r := range routes {
		paths[r.Doc.ID] = r.Method + " " + openapi.OpenAPIPath(r.Path)
	}
	docs := make([]ToolDoc, 0, len(tools))
	for _, t := range tools {
		// The definition tools/list serves, schemas and all.
		d := ToolDoc{Name: t.tool.Name, Title: t.tool.Title, Description: t.tool.Description, Route: paths[t.route]}
		if t.need != nil {
			d.Scopes = t.need.names
		}
		if t.group == groupRecords && t.need == nil {
			d.Needs = "any key that holds some `<collection>:read` (the tool is listed with the record tools)"
		}
		in, ok := t.tool.InputSchema.(*jsonschema.Schema)
		if !ok {
			return nil, fmt.Errorf("mcp tool %s: input schema is a %T", t.name, t.tool.InputSchema)
		}
		for name, p := range in.Properties {
			typ := p.Type
			if typ == "" {
				typ = strings.Join(p.Types, " or ")
			}
			if len(p.Enum) > 0 {
				typ = fmt.Sprintf("%s (one of %d values)", typ, len(p.Enum))
			}
			d.Arguments = append(d.Arguments, ToolArg{Name: name, Type: typ, Description: p.Description,
				Required: slices.Contains(in.Required, name)})
		}
		slices.SortFunc(d.Arguments, func(a, b ToolArg) int { return strings.Compare(a.Name, b.Name) })
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b ToolDoc) int { return strings.Compare(a.Name, b.Name) })
	return docs, nil
}
