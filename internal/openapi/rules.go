package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// scopeNames states in the document the rule the service enforces on
// scope names: a name outside the catalog is refused, so the schemas that
// carry scopes list the catalog's names (a pattern would admit names the
// service refuses).
func scopeNames(schemas openapi3.Schemas) {
	names := toAny(catalog.Scopes())
	items := func(component, member string) *openapi3.Schema {
		s := schemas[component]
		if s == nil || s.Value == nil || s.Value.Properties[member] == nil {
			return nil
		}
		arr := s.Value.Properties[member].Value
		if arr == nil || arr.Items == nil {
			return nil
		}
		return arr.Items.Value
	}
	for _, at := range [][2]string{{"SessionRequest", "scopes"}, {"RestaurantGrant", "scopes"}} {
		if it := items(at[0], at[1]); it != nil {
			it.Enum, it.Pattern = names, ""
			it.Description = "A scope name (spec 5.2): a collection's read or write scope, or a delivery scope."
		}
	}
}
