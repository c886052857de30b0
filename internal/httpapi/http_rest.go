package httpapi

import (
	"github.com/gin-gonic/gin"
)

// The reads of the service are operations that know nothing of their face:
// a REST route serves one (serve, below) and an MCP tool calls the same one
// (mcp_tools.go), after the same access check (allow). Each takes its
// parameters as the raw text a client sent, so both faces parse them with
// the same code and refuse them with the same messages, and each returns
// the wire struct both faces send.

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
