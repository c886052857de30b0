package httpapi

import (
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
