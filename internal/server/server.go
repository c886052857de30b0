// Package server runs an http.Handler with production timeouts, a cap on
// open connections, net/http's own refusals answered in the service's
// terms (told apart from a handler's writes by when they happen, conn.go)
// and a bounded graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Options are the timeouts and limits of the HTTP server.
type Options struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests.
	ShutdownTimeout time.Duration
	// Canned, when set, replaces the plain-text answers net/http writes
	// itself to requests it cannot parse (see conn), and answers the
	// connections refused over MaxConns.
	Canned CannedRenderer
	// MaxConns caps the connections open at once; beyond it a new one is
	// answered 503 (Canned) and closed. 0: no cap.
	MaxConns int
	// ClientConns caps the connections one client holds open at once, so
	// that one address cannot take all MaxConns and lock the others out;
	// beyond it a new connection of that client is answered 503 (Canned)
	// and closed. 0: no cap but MaxConns.
	ClientConns int
	// Client is the client a connection's peer address is one of (its
	// prefix, internal/clientip); ok is false for a peer that has no share
	// (a trusted proxy, whose connections carry many clients).
	Client func(netip.Addr) (client netip.Prefix, ok bool)
}

// Serve answers on ln until ctx is cancelled, then stops accepting, lets
// in-flight requests finish for at most ShutdownTimeout, and returns. It
// does not close anything it did not create: callers flush and close their
// own resources after it returns, when no handler can still use them.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o Options, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           outermost(h),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// OPTIONS * reaches the handler like any request (net/http would
		// answer it itself: no log line, no budget, no audit).
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:                  func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext:                  connContext,
		ConnState:                    connState,
	}
	lst := &listener{Listener: ln, render: o.Canned, max: int64(o.MaxConns), shares: newShares(o.ClientConns, o.Client)}
	defer lst.stopLingering()
	ln = lst
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

// outermost is the handler net/http calls: it closes the connection's
// window for net/http's own answers (conn) before h runs, and marks a
// request whose framing is ambiguous (AmbiguousFraming).
func outermost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if enter(r) {
			r = r.WithContext(context.WithValue(r.Context(), ambiguousKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

type ambiguousKey struct{}

// AmbiguousFraming reports a request that carried both Content-Length and
// Transfer-Encoding. net/http reads it by Transfer-Encoding and drops
// Content-Length; RFC 9112 6.3 calls such a message a possible smuggling
// attempt, to be handled as an error, the connection closed after the
// answer. Only requests served through Serve are ever marked.
func AmbiguousFraming(r *http.Request) bool {
	v, _ := r.Context().Value(ambiguousKey{}).(bool)
	return v
}
