package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/swaggest/swgui/v5emb"
)

func (a *API) openAPIDocument(c *gin.Context) error {
	c.Data(http.StatusOK, "application/json", a.openapiJSON)
	return nil
}

// The documentation page renders the document with Swagger UI from assets
// embedded in the binary (no CDN), at /v1/docs (spec 9.1: every path is
// prefixed /v1) and at its first address /docs.
var (
	docsV1   = v5emb.New("foodsafe partner API", "/v1/openapi.json", "/v1/docs")
	docsRoot = v5emb.New("foodsafe partner API", "/openapi.json", "/docs")
)

func (a *API) docsPage(ui http.Handler) handler {
	return func(c *gin.Context) error {
		ui.ServeHTTP(&problemWriter{ResponseWriter: c.Writer, a: a, c: c}, c.Request)
		return nil
	}
}
