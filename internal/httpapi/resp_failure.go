package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
)

// panicError is a recovered panic as a failure: its value, and the stack
// where it happened.
type panicError struct {
	value any
	stack string
}

func (p *panicError) Error() string { return fmt.Sprint("panic: ", p.value) }

// recovered wraps what recover returned, with the stack of the goroutine
// that panicked (a deferred call still runs on it).
func recovered(rec any) *panicError {
	return &panicError{value: rec, stack: string(debug.Stack())}
}

// logFailure writes the one ERROR line of a failure: its cause (a panic's
// value and stack), the request and trace ids, and the route. Neither the
// access line nor any other layer repeats it at ERROR.
func (a *API) logFailure(ctx context.Context, reqID, route string, err error) {
	msg, attrs := "internal error", ctxLogAttrs(ctx, reqID, slog.String("route", route))
	if p, ok := errors.AsType[*panicError](err); ok {
		msg = "panic"
		attrs = append(attrs, slog.String("panic", fmt.Sprint(p.value)), slog.String("stack", p.stack))
	} else {
		attrs = append(attrs, slog.Any("error", err))
	}
	a.log.LogAttrs(context.WithoutCancel(ctx), slog.LevelError, msg, attrs...)
}
