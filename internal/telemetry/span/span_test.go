package span

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Without a recording parent, Start makes nothing and changes nothing;
// under one, a child of it.
func TestStartOnlyUnderARecordingSpan(t *testing.T) {
	ctx := context.Background()
	got, s := Start(ctx, "rate limit")
	if got != ctx || s.IsRecording() {
		t.Fatalf("a span was made without a parent")
	}
	s.End()

	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, parent := tp.Tracer("test").Start(ctx, "GET /x")
	_, child := Start(ctx, "rate limit")
	child.End()
	parent.End()
	spans := mem.GetSpans()
	if len(spans) != 2 || spans[0].Name != "rate limit" || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans = %+v", spans)
	}

	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	ctx, p := unsampled.Tracer("test").Start(context.Background(), "GET /y")
	if got, s := Start(ctx, "rate limit"); got != ctx || s.IsRecording() {
		t.Fatalf("a span was made under a request not sampled")
	}
	p.End()
}

// A budget says yes n times, then no, counting the refusals; without one
// every span is allowed.
func TestBudget(t *testing.T) {
	ctx := WithBudget(context.Background(), 2)
	for i, want := range []bool{true, true, false, false} {
		if got := Spend(ctx); got != want {
			t.Fatalf("spend %d = %v, want %v", i, got, want)
		}
	}
	if Dropped(ctx) != 2 {
		t.Fatalf("dropped = %d, want 2", Dropped(ctx))
	}
	if !Spend(context.Background()) || Dropped(context.Background()) != 0 {
		t.Fatal("no budget must allow every span")
	}
}
