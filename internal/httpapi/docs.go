package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"
	"github.com/swaggest/swgui/v5emb"

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

func (a *API) openAPIDocument(c *gin.Context) error {
	c.Data(http.StatusOK, "application/json", a.openapiJSON)
	return nil
}

// docsUI renders /openapi.json with Swagger UI from assets embedded in the
// binary (no CDN).
var docsUI = v5emb.New("foodsafe partner API", "/openapi.json", "/docs")

func (a *API) docsPage(c *gin.Context) error {
	docsUI.ServeHTTP(&problemWriter{ResponseWriter: c.Writer, a: a, c: c}, c.Request)
	return nil
}

func marshalDocument(doc *openapi3.T) ([]byte, error) {
	return json.MarshalIndent(doc, "", "  ")
}
