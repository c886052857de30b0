// Package server runs an http.Handler with production timeouts and a
// bounded graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Options are the timeouts of the HTTP server.
type Options struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests.
	ShutdownTimeout time.Duration
	// Canned, when set, replaces the plain-text answers net/http writes
	// itself to requests it cannot parse (see cannedListener).
	Canned CannedRenderer
}

// Serve answers on ln until ctx is cancelled, then stops accepting, lets
// in-flight requests finish for at most ShutdownTimeout, and returns. It
// does not close anything it did not create: callers flush and close their
// own resources after it returns, when no handler can still use them.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o Options, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if o.Canned != nil {
		ln = cannedListener{Listener: ln, render: o.Canned}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "drain_timeout", o.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("drain timeout reached; closing remaining connections")
		err = srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
