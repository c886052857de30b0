package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// HTTPHandler wraps the API's handler in otelhttp's server
// instrumentation: one server span per request, a child of the caller's
// traceparent when it sent a valid one, with HTTP semantic-convention
// attributes. The span is named after the route once the router has
// matched it (httpapi's traceRequest); until then, and for an unmatched
// path, it is the method alone. Off, h itself.
func (t *Tracing) HTTPHandler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// HTTPTransport wraps rt in otelhttp's client instrumentation: a client
// span per request, and the traceparent header that makes the server's
// spans children of it. name names a request's span (nil: its method).
// Under a context with a span budget (span.WithBudget), a request past
// the budget is sent as it is, unrecorded. Off, rt itself.
func (t *Tracing) HTTPTransport(rt http.RoundTripper, name func(*http.Request) string) http.RoundTripper {
	if t == nil {
		return rt
	}
	if name == nil {
		name = func(r *http.Request) string { return r.Method }
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name(r) }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return !trace.SpanFromContext(r.Context()).IsRecording() || span.Spend(r.Context())
		}),
	)
}
