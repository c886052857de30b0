package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// The reads of the service are operations that know nothing of their face
// (request and operation, req_request.go): a REST route serves one (serve,
// below) and an MCP tool calls the same one (http_mcp_tools.go), after the
// same access check (allow).

// serve is the REST face of an operation: its result as the JSON body.
func (a *API) serve(o operation) handler {
	return func(c *gin.Context) error {
		out, err := o.run(c.Request.Context(), a.restRequest(c))
		if err != nil {
			return err
		}
		if c.Request.Method == http.MethodHead {
			respondHead(c)
			return nil
		}
		if jw, ok := out.(jsonWriter); ok {
			writeStreamed(c, jw)
			return nil
		}
		if ap, ok := out.(jsonAppender); ok && writeAppended(c, ap) {
			return nil
		}
		writePureJSON(c, out)
		return nil
	}
}

// respondHead answers a HEAD of a read with what a GET would: the
// operation ran (its status is the GET's: the key, the parameters, the
// cursor and the store all had their say), but the body, which net/http
// would drop, is not built: encoding a walk page of large records was
// most of a HEAD's CPU. Content-Length, which only the body gives, is not
// sent (RFC 9110 9.3.2 allows that), nor is a Content-Encoding the
// compressor only chooses for a body.
func respondHead(c *gin.Context) {
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
}
