package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// The reads of the service are operations that know nothing of their face:
// a REST route serves one (serve, below) and an MCP tool calls the same one
// (mcp_tools.go), after the same access check (allow). Each takes its
// parameters as the raw text a client sent, so both faces parse them with
// the same code and refuse them with the same messages, and each returns
// the wire struct both faces send.

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

// jsonWriter is a result that may be too large to hold as one answer (a
// key's restaurants), which writes its JSON to the response in pieces
// made in buf, and returns the buffer it used.
type jsonWriter interface {
	WriteJSON(w io.Writer, buf []byte) ([]byte, error)
}

// writeStreamed answers what jw writes, as PureJSON would (same type,
// same bytes), in pieces made in a kept buffer: a short answer is one
// write (with a Content-Length), a long one goes out chunked as it is
// made. A failure to write is the client's connection going away: there
// is no one to tell.
func writeStreamed(c *gin.Context, jw jsonWriter) {
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	bp := bodyBuffers.Get().(*[]byte)
	b, _ := jw.WriteJSON(c.Writer, *bp)
	if cap(b) <= maxPooledBody {
		*bp = b[:0]
	}
	bodyBuffers.Put(bp)
}

// jsonAppender is a result that writes its own JSON (wire.WalkPage and
// wire.Envelope: records, whose data is already JSON; a page of
// deliveries; see wire/append.go).
type jsonAppender interface {
	AppendJSON([]byte) ([]byte, error)
}

// bodyBuffers keeps answer buffers between requests: a walk page of 100
// records is tens of kilobytes.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBody is the largest buffer kept for the next answer.
const maxPooledBody = 1 << 20

// writeAppended writes what ap appends, as PureJSON would (same type, same
// trailing newline). false, with nothing written, when ap refuses (a
// string that is not UTF-8): encoding/json then writes it its own way.
func writeAppended(c *gin.Context, ap jsonAppender) bool {
	bp := bodyBuffers.Get().(*[]byte)
	b, err := ap.AppendJSON((*bp)[:0])
	if err != nil {
		// A refusal returns no buffer: the one taken is kept as it was.
		bodyBuffers.Put(bp)
		return false
	}
	defer func() {
		if cap(b) <= maxPooledBody { // a page of huge records is not kept
			*bp = b[:0]
			bodyBuffers.Put(bp)
		}
	}()
	c.Data(http.StatusOK, "application/json; charset=utf-8", append(b, '\n'))
	return true
}

// writePureJSON writes v as c.PureJSON does (encoding/json, no HTML
// escaping, a trailing newline), encoded first into a kept buffer: the
// answer goes out in one write with a Content-Length, where PureJSON
// streams it in 4 KiB pieces with chunked encoding. When v does not
// encode, PureJSON fails as it always did.
func writePureJSON(c *gin.Context, v any) {
	bp := bodyBuffers.Get().(*[]byte)
	buf := bytes.NewBuffer((*bp)[:0])
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	if err == nil {
		c.Data(http.StatusOK, "application/json; charset=utf-8", buf.Bytes())
	}
	if b := buf.Bytes(); cap(b) <= maxPooledBody {
		*bp = b[:0]
		bodyBuffers.Put(bp)
	}
	if err != nil {
		c.PureJSON(http.StatusOK, v)
	}
}
