package httpapi

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HeaderTraceparent is the W3C Trace Context header.
const HeaderTraceparent = "Traceparent"

// traceID returns the trace id (32 lower-case hex digits) of a valid W3C
// traceparent header, or "". With tracing off the service starts no spans
// and exports nothing: it only puts the caller's trace id into its log
// lines, so a request can be found from the caller's trace (with tracing
// on, the logs carry the ids of the request's own spans: req_log.go).
// Parsing is OpenTelemetry's
// reference propagator, which is strict: lower-case hex only, version ff
// refused, version 00 with exactly four fields, all-zero ids refused.
// Several traceparent fields are ambiguous and ignored too.
func traceID(h http.Header) string {
	vs := h[HeaderTraceparent]
	if len(vs) != 1 {
		return ""
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), traceparentCarrier(vs[0]))
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// traceparentCarrier hands the propagator the one traceparent value and
// nothing else (tracestate is vendor data the service has no use for).
type traceparentCarrier string

func (c traceparentCarrier) Get(key string) string {
	if key == "traceparent" {
		return string(c)
	}
	return ""
}

func (traceparentCarrier) Set(string, string) {}

func (traceparentCarrier) Keys() []string { return []string{"traceparent"} }
