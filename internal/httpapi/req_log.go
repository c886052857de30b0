package httpapi

import (
	"context"
	"log/slog"
	"sync"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/openapi"
)

// traceIDKey holds the trace id in a request's context.
type traceIDKey struct{}

// ctxLogAttrs starts every log line about a request: its request id, its
// trace and span ids (from ctx, the request's context), then more. With
// tracing on, those are the ids of the request's own span (the server
// span, or the child span the line was written under), in the caller's
// trace when it sent a valid traceparent; with tracing off, the trace id
// of that traceparent alone. logAttrs is the same from a gin context.
func ctxLogAttrs(ctx context.Context, reqID string, more ...slog.Attr) []slog.Attr {
	attrs := make([]slog.Attr, 0, 3+len(more))
	attrs = append(attrs, slog.String("request_id", reqID))
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsRemote() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	} else if t, _ := ctx.Value(traceIDKey{}).(string); t != "" {
		attrs = append(attrs, slog.String("trace_id", t))
	}
	return append(attrs, more...)
}

// logAttrs is ctxLogAttrs for a request's gin context.
func logAttrs(c *gin.Context, more ...slog.Attr) []slog.Attr {
	return ctxLogAttrs(c.Request.Context(), requestID(c), more...)
}

// routeOf is the route template (never the raw path, which may carry ids a
// log should not multiply into cardinality), or a marker for unmatched
// paths. It is in the OpenAPI document's form, /v1/restaurants/{restaurantId}/...,
// everywhere it is written (access log, metric labels, audit trail), the
// form partners and the docs use, so a filter copied from one matches the
// others; gin's own form (:restaurantId) stays inside the router.
func routeOf(c *gin.Context) string {
	r := c.FullPath()
	if r == "" {
		return "(unmatched)"
	}
	if form, ok := routeForms.Load(r); ok {
		return form.(string)
	}
	form := openapi.OpenAPIPath(r)
	routeForms.Store(r, form)
	return form
}

// routeForms maps each gin route path to its OpenAPI form, made once per
// route instead of by a regular expression per request. It holds only
// registered routes (FullPath is one or empty), so it is bounded.
var routeForms sync.Map
