package main

import (
	"context"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/mirror"
	"github.com/foodsafe/foodsafe/internal/telemetry"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// runSpans is the most request spans one run's trace holds: a first sync
// of a large key is thousands of requests; past this many, requests go
// unrecorded (and the server traces them on its own).
const runSpans = 1000

// startTracing turns tracing on when the OTEL_* variables ask for it (as
// for the service; OTEL_SERVICE_NAME defaults to foodsafe-sync). Every
// request the client sends, to the API and to download URLs, then gets a
// client span and a traceparent: the server's spans of a request join the
// run's trace. The client's transport is Go's default one (the mirror's
// HTTP clients set none), so that is where the instrumentation goes,
// without a change to the client. The returned stop exports what is left.
func startTracing(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	tr, err := telemetry.Setup(ctx, "foodsafe-sync", log)
	if err != nil || !tr.On() {
		return func() {}, err
	}
	http.DefaultTransport = tr.HTTPTransport(http.DefaultTransport, nil)
	return func() { _ = tr.Shutdown(context.WithoutCancel(ctx)) }, nil
}

// tracedRun is one run of the syncer as a trace of its own ("sync run",
// a root span: a run is nobody's request) over the requests it sends.
func tracedRun(ctx context.Context, s *mirror.Syncer) (mirror.Summary, error) {
	ctx, sp := otel.Tracer(span.Scope).Start(ctx, "sync run", trace.WithNewRoot())
	defer sp.End()
	sum, err := s.Run(span.WithBudget(ctx, runSpans))
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Int64("foodsafe.sync.pages", sum.Pages), attribute.Int64("foodsafe.sync.records", sum.Records),
			attribute.Int64("foodsafe.sync.requests", sum.Requests))
		span.Fail(sp, err)
	}
	return sum, err
}
