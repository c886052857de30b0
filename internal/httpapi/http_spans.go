package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// The attributes the service adds to its spans, beside the semantic
// conventions' own. None holds a secret: the key's public id is what
// support quotes, and the exporter redacts whatever a client pasted
// elsewhere (telemetry's redacting exporter).
const (
	// attrRequestID is the request id: the problem document's requestId
	// and the log lines' request_id, so either finds the trace.
	attrRequestID = attribute.Key("foodsafe.request.id")
	// attrKeyID is the public id of the key (or of the key a session
	// token acts for) the request presented.
	attrKeyID = attribute.Key("foodsafe.key.id")
)

// traceRequest completes the server span otelhttp started around the
// router (telemetry.HTTPHandler): named by the route template once gin
// has matched it ("GET /v1/restaurants/{restaurantId}/deliveries", the
// form of the logs, metrics and audit trail; the method alone for an
// unmatched path), with http.route, the request id, the client address
// as the access log reads it (through trusted proxies only, where
// otelhttp would believe any X-Forwarded-For), and, once the chain has
// run, the key's public id. It times writing the answer (answerWriter).
// Installed only when tracing is on.
func (a *API) traceRequest(c *gin.Context) {
	sp := trace.SpanFromContext(c.Request.Context())
	if !sp.IsRecording() {
		c.Next()
		return
	}
	if c.FullPath() != "" {
		route := routeOf(c)
		sp.SetName(c.Request.Method + " " + route)
		sp.SetAttributes(semconv.HTTPRoute(route))
	}
	sp.SetAttributes(attrRequestID.String(requestID(c)), semconv.ClientAddress(c.ClientIP()))
	w := &answerWriter{ResponseWriter: c.Writer, ctx: c.Request.Context()}
	c.Writer = w
	defer func() {
		// Also when a handler panics: the recoverer below answers, and
		// the answer's span still ends.
		c.Writer = w.ResponseWriter
		w.end()
		if k, ok := logKeyIDKey.get(c); ok {
			sp.SetAttributes(attrKeyID.String(k))
		}
	}()
	c.Next()
}

// answerWriter times the writing of an answer: a "write answer" span
// from its first byte to the end of the handler chain, with the bytes
// written (after compression: the bytes on the wire). The gap between
// the last statement's span and this one is the answer being built.
type answerWriter struct {
	gin.ResponseWriter
	ctx  context.Context
	span trace.Span
}

func (w *answerWriter) start() {
	if w.span == nil {
		_, w.span = span.Start(w.ctx, "write answer")
	}
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

func (w *answerWriter) WriteString(s string) (int, error) {
	w.start()
	return w.ResponseWriter.WriteString(s)
}

// end ends the span, if an answer was written.
func (w *answerWriter) end() {
	if w.span == nil {
		return
	}
	w.span.SetAttributes(semconv.HTTPResponseBodySize(max(w.Size(), 0)))
	w.span.End()
}

// Unwrap lets http.ResponseController reach the connection (upload and
// download deadlines).
func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// traceMCP names on the request's server span what an MCP request
// called: the JSON-RPC method (mcp.method.name) and, for tools/call, the
// tool (gen_ai.tool.name), as the MCP semantic conventions name them.
func traceMCP(ctx context.Context, call *mcpCall) {
	sp := trace.SpanFromContext(ctx)
	if !sp.IsRecording() {
		return
	}
	method, tool := call.names()
	if method == "" {
		return
	}
	sp.SetAttributes(semconv.McpMethodNameKey.String(method))
	if tool != "" {
		sp.SetAttributes(semconv.GenAIToolName(tool))
	}
}

// traceTool ends a tool call's span ("tools/call walk_records", under the
// request's server span, above the statements the tool ran), marked
// failed when the tool answered an error result.
func traceTool(sp trace.Span, tool string, res *mcp.CallToolResult) {
	if sp.IsRecording() {
		sp.SetAttributes(semconv.McpMethodNameKey.String("tools/call"), semconv.GenAIToolName(tool))
		if res == nil || res.IsError {
			sp.SetStatus(codes.Error, "the tool answered an error")
		}
	}
	sp.End()
}
