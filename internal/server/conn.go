package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Which bytes on a connection are net/http's own answers, and which a
// handler's, is a matter of when they are written, never of what they
// say. net/http writes its plain-text answers (431, 400, 501, 505, and 417
// for an unknown Expect) straight to the connection after it failed to
// read a request, before any handler runs; a handler only ever runs after
// a request was read, and everything it writes is flushed before the
// connection goes idle (http.StateIdle) and the next request is read. So
// a connection is "between handlers" from the moment it is accepted, and
// again from each StateIdle, until the outermost handler is entered for
// the next request: a write in that window can only be net/http's own,
// and is answered in the service's terms (Canned). Every other write, of
// any bytes (a file that holds a whole HTTP response included), passes
// through untouched.

// conn is an accepted connection: the window above, and the head of the
// request being read for an answer written in it.
type conn struct {
	net.Conn
	l *listener
	// inHandler is set when the outermost handler takes a request and
	// cleared when the connection goes idle.
	inHandler atomic.Bool
	closeOnce sync.Once
	// client holds the connection's place in its client's share (shares).
	client netip.Prefix

	mu   sync.Mutex
	head headScanner
}

type connKey struct{}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.inHandler.Load() {
		c.mu.Lock()
		c.head.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// Write passes every write through, except one of net/http's own answers
// (written between handlers, in a single call, before net/http closes the
// connection), which it replaces whole.
func (c *conn) Write(p []byte) (int, error) {
	if c.inHandler.Load() || c.l.render == nil {
		return c.Conn.Write(p)
	}
	status, text, ok := parseCanned(p)
	if !ok {
		return c.Conn.Write(p)
	}
	c.mu.Lock()
	head := c.head.snapshot()
	c.mu.Unlock()
	b := cannedResponse(status, c.l.render(Canned{Status: status, Text: text, Head: head,
		Local: c.LocalAddr(), Remote: c.RemoteAddr()}))
	if _, err := c.Conn.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps the kernel's sendfile path for file downloads (net/http
// uses it when the connection offers it); only handlers write this way.
func (c *conn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite keeps the half-close net/http does before hanging up on a
// client that is still sending.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.l.open.Add(-1)
		c.l.shares.release(c.client)
	})
	return c.Conn.Close()
}

// enter marks the request's connection as in its handler, and returns the
// head the connection read of it.
func enter(r *http.Request) RequestHead {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		return RequestHead{}
	}
	c.inHandler.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.head.snapshot()
}

// connState ends a connection's handler window when it goes idle: what
// it reads next is the next request.
func connState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || s != http.StateIdle {
		return
	}
	c.mu.Lock()
	c.head.reset()
	c.mu.Unlock()
	c.inHandler.Store(false)
}

// listener wraps every accepted connection in a conn, and refuses
// connections beyond max open at once (0: no cap) and beyond a client's
// share (shares).
type listener struct {
	net.Listener
	render CannedRenderer
	max    int64
	open   atomic.Int64
	shares *shares
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); l.max > 0 && n > l.max {
			l.open.Add(-1)
			l.refuse(nc, false)
			continue
		}
		client, ok := l.shares.take(nc.RemoteAddr())
		if !ok {
			l.open.Add(-1)
			l.refuse(nc, true)
			continue
		}
		return &conn{Conn: nc, l: l, client: client}, nil
	}
}

// refuse answers a connection over the cap, or over its client's share,
// with a 503 and closes it, on a goroutine of its own (a client that does
// not read must not hold up Accept), within refuseTimeout.
func (l *listener) refuse(nc net.Conn, share bool) {
	go func() {
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(refuseTimeout))
		if l.render != nil {
			_, _ = nc.Write(cannedResponse(http.StatusServiceUnavailable, l.render(Canned{Status: http.StatusServiceUnavailable,
				Overloaded: true, OverShare: share, Local: nc.LocalAddr(), Remote: nc.RemoteAddr()})))
		}
		// Closed only once the client has had the answer: closing with its
		// request unread would reset the connection, and could lose it.
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.CopyN(io.Discard, nc, 64<<10)
	}()
}

// refuseTimeout bounds the answer to a connection over the cap.
const refuseTimeout = time.Second

// connContext keeps the connection in every request's context, for enter.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}
