// Package span starts the service's own child spans (authentication, the
// rate limiter, writing an answer, a tool call, a file store call) where
// no instrumentation library has one. A span is made only under a parent
// that records: with tracing off, or a request not sampled, the request
// path pays a context lookup and nothing else.
package span

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of the service's own spans.
const Scope = "github.com/foodsafe/foodsafe"

// none is the span that records nothing, for callers that End it.
var none = trace.SpanFromContext(context.Background())

// Start starts a child of the span in ctx, made by that span's tracer
// provider, when that span records; otherwise it returns ctx unchanged and
// a span that records nothing. On a request path, pass no attrs (the
// slice would be built while tracing is off too) and set attributes on
// the span, under IsRecording when they cost anything to build.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, none
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Fail marks s as failed with err (nil: nothing).
func Fail(s trace.Span, err error) {
	if err != nil && s.IsRecording() {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
	}
}

// budget is what WithBudget puts in a context.
type budget struct {
	left    atomic.Int64
	dropped atomic.Int64
}

type budgetKey struct{}

// WithBudget bounds the spans libraries make under ctx (the statements
// of a maintenance run, thousands on a large database) to n: past it,
// Spend says no and the work runs unrecorded, counted by Dropped. A trace
// of a few hundred statements shows where a run spends its time; one of
// forty thousand overflows the exporter's queue and the collector's page.
func WithBudget(ctx context.Context, n int64) context.Context {
	b := &budget{}
	b.left.Store(n)
	return context.WithValue(ctx, budgetKey{}, b)
}

// Spend takes one span from ctx's budget: false once it is spent (true
// without a budget).
func Spend(ctx context.Context) bool {
	b, ok := ctx.Value(budgetKey{}).(*budget)
	if !ok {
		return true
	}
	if b.left.Add(-1) >= 0 {
		return true
	}
	b.dropped.Add(1)
	return false
}

// Dropped is how many spans ctx's budget refused.
func Dropped(ctx context.Context) int64 {
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		return b.dropped.Load()
	}
	return 0
}
