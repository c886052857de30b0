// Package telemetry exports OpenTelemetry traces over OTLP when the
// standard OTEL_* variables ask for it, and hands each seam of the service
// its instrumentation: the HTTP server and client (otelhttp), the pgx pool
// (otelpgx), the Redis client (redisotel). Tracing is off unless an OTLP
// endpoint is set; off, nothing is installed anywhere, so the service
// runs exactly as it does without this package.
//
// The SDK reads its own variables (endpoint, headers, timeout, TLS,
// sampler, resource attributes, batch processor, span limits): this
// package decides only whether tracing is on, refuses settings it cannot
// honour, and removes secrets from every span before it leaves the
// process (export.go).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/foodsafe/foodsafe/internal/version"
)

// Tracing is the process's trace pipeline. A nil *Tracing is tracing off:
// every method works on it and installs nothing.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Propagator reads and writes the W3C traceparent header only: baggage
// and tracestate are the caller's vendor data, which the service neither
// needs nor forwards.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Setup starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (and neither OTEL_SDK_DISABLED
// nor OTEL_TRACES_EXPORTER=none says otherwise); it returns nil, nil when
// tracing is off. service names the process when OTEL_SERVICE_NAME does
// not. A setting the SDK would ignore or replace (a sampler it does not
// know, a protocol other than http/protobuf) stops the start instead, so
// an operator never believes traces are sampled as configured when they
// are not. The provider becomes the global one, so code that starts a
// root span (maintenance jobs, a sync run) reaches it through otel.Tracer.
func Setup(ctx context.Context, service string, log *slog.Logger) (*Tracing, error) {
	on, err := enabled()
	if err != nil || !on {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceVersion(version.Version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the above
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The SDK reports a sampler it cannot read through the global error
	// handler and falls back to its default; caught here, it stops the
	// start.
	var setupErr error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { setupErr = errors.Join(setupErr, err) }))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(redacting{exp}), // OTEL_BSP_* size and pace the batches
		sdktrace.WithResource(res),
	)
	if setupErr != nil {
		_ = tp.Shutdown(ctx)
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG: %w", setupErr)
	}
	// From now on the SDK's complaints (an unreachable collector, a full
	// queue) are WARN lines of the service's JSON log, not plain text.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("trace export: "+err.Error(), "component", "opentelemetry")
	}))
	otel.SetLogger(logr.FromSlogHandler(log.Handler()))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator)
	return &Tracing{provider: tp}, nil
}

// enabled reads whether the variables turn tracing on, and refuses the
// settings this service cannot honour.
func enabled() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch e := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: the service exports traces over OTLP only (otlp, or none to turn tracing off)", e)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(os.Getenv(name)); p != "" && p != "http/protobuf" {
			return false, fmt.Errorf("%s=%q: the service sends OTLP over HTTP (http/protobuf, a collector's port 4318), not %s", name, p, p)
		}
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// On reports whether tracing is on.
func (t *Tracing) On() bool { return t != nil }

// Provider is the tracer provider: a no-op one when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Shutdown exports the spans still queued (within ctx) and stops the
// exporter. Call it after the last request has been answered.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
