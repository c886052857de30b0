// Package stores instruments the clients of the service's stores for
// tracing: the PostgreSQL pool (otelpgx), the Redis client (redisotel) and
// the S3 client's spans' names. It is apart from package telemetry, which
// foodsafe-sync links too, so the client links none of these libraries.
package stores

import (
	"context"
	"net/http"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/telemetry"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// S3SpanName names the span of an HTTP request the AWS SDK sends by its
// operation, "S3.PutObject" (the SDK keeps its service and operation in
// the request's context), else by the method.
func S3SpanName(r *http.Request) string {
	ctx := r.Context()
	if op := awsmiddleware.GetOperationName(ctx); op != "" {
		return awsmiddleware.GetServiceID(ctx) + "." + op
	}
	return r.Method
}

// PGX is the pool's tracer: otelpgx's spans for every statement,
// pipeline, prepare, connect and pool acquire made under a recording span
// (none outside a trace: the key cache's listener, the audit writer),
// named by the sqlc query name (sqlName), with db.system.name postgresql
// and the statement's text, never its arguments. Off, nil.
func PGX(t *telemetry.Tracing) pgx.QueryTracer {
	if !t.On() {
		return nil
	}
	return pgxTracer{otelpgx.NewTracer(
		otelpgx.WithTracerProvider(t.Provider()),
		otelpgx.WithSpanNameCtxFunc(sqlName),
	)}
}

// pgxTracer is otelpgx's tracer with a pipeline's span named by its
// statements ("pipeline RecordWalkPage, CollectionStreamHead" rather than
// otelpgx's "batch start"), and every span it starts counted against the
// budget of a context that has one (span.WithBudget). The rest of each
// hook is otelpgx's own.
type pgxTracer struct{ *otelpgx.Tracer }

// within hides the span of ctx from otelpgx (which then makes none)
// once ctx's span budget is spent (span.WithBudget).
func within(ctx context.Context) context.Context {
	if trace.SpanFromContext(ctx).IsRecording() && !span.Spend(ctx) {
		return trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(ctx))
	}
	return ctx
}

func (p pgxTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return p.Tracer.TraceQueryStart(within(ctx), conn, data)
}

func (p pgxTracer) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	return p.Tracer.TraceCopyFromStart(within(ctx), conn, data)
}

// TracePrepareStart names a prepare "prepare RecordWalkPage": under the
// statement's own span (pgx prepares on a statement cache miss), the two
// would otherwise read as the statement twice.
func (p pgxTracer) TracePrepareStart(ctx context.Context, conn *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	ctx = within(ctx)
	before := trace.SpanFromContext(ctx).SpanContext()
	ctx = p.Tracer.TracePrepareStart(ctx, conn, data)
	if s := trace.SpanFromContext(ctx); !s.SpanContext().Equal(before) {
		s.SetName("prepare " + sqlName(ctx, data.SQL))
	}
	return ctx
}

func (p pgxTracer) TraceConnectStart(ctx context.Context, data pgx.TraceConnectStartData) context.Context {
	return p.Tracer.TraceConnectStart(within(ctx), data)
}

func (p pgxTracer) TraceAcquireStart(ctx context.Context, pool *pgxpool.Pool, data pgxpool.TraceAcquireStartData) context.Context {
	return p.Tracer.TraceAcquireStart(within(ctx), pool, data)
}

func (p pgxTracer) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	ctx = within(ctx)
	before := trace.SpanFromContext(ctx).SpanContext()
	ctx = p.Tracer.TraceBatchStart(ctx, conn, data)
	s := trace.SpanFromContext(ctx)
	if s.SpanContext().Equal(before) || data.Batch == nil {
		return ctx // no span of its own (the request is not sampled): nothing to rename
	}
	names := make([]string, 0, data.Batch.Len())
	seen := map[string]bool{}
	for _, q := range data.Batch.QueuedQueries {
		if n := sqlName(ctx, q.SQL); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	s.SetName("pipeline " + strings.Join(names, ", "))
	return ctx
}

// sqlName is the sqlc name of a statement (its first line is
// "-- name: RecordWalkPage :many", in sqlc's text and in the pipelines
// that reuse it), else its first word (SELECT, LISTEN), as otelpgx names
// statements by default.
func sqlName(ctx context.Context, sql string) string {
	if rest, ok := strings.CutPrefix(sql, "-- name: "); ok {
		if name, _, ok := strings.Cut(rest, " "); ok && name != "" {
			return name
		}
	}
	return otelpgx.SQLOperationName(ctx, sql)
}

// Redis adds redisotel's span per command or pipeline to a Redis client:
// the command's name, without its arguments (the rate limiter's keys hold
// client addresses) and without the caller's source position (a stack
// walk per command). Off, nil.
func Redis(t *telemetry.Tracing) func(*redis.Client) error {
	if !t.On() {
		return nil
	}
	return func(c *redis.Client) error {
		return redisotel.InstrumentTracing(c,
			redisotel.WithTracerProvider(t.Provider()),
			redisotel.WithDBStatement(false),
			redisotel.WithCallerEnabled(false),
		)
	}
}
