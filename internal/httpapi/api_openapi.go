package httpapi

import (
	"encoding/json"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// Document builds the OpenAPI document from the route table and the
// schemas, as served at /openapi.json and printed by `foodsafe openapi`.
func Document(schemas *validate.Set, info openapi.Info) (*openapi3.T, error) {
	a := &API{}
	var ops []openapi.Op
	for _, r := range a.routes() {
		ops = append(ops, r.op())
	}
	return openapi.Build(ops, schemas.Docs, info)
}

func marshalDocument(doc *openapi3.T) ([]byte, error) {
	return json.MarshalIndent(doc, "", "  ")
}
