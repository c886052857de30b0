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
	// answered says something was written since the connection was last
	// idle: closing it now may hang up on a client still sending the
	// request that answer refused (linger).
	answered  atomic.Bool
	closing   atomic.Bool
	closeOnce sync.Once
	// client holds the connection's place in its client's share (shares).
	client netip.Prefix

	mu   sync.Mutex
	head headScanner
	// frames follows every request read, handler or not (framing).
	frames framing
}

type connKey struct{}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if !c.inHandler.Load() {
			c.head.feed(p[:n])
		}
		c.frames.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// Write passes every write through, except one of net/http's own answers
// (written between handlers, in a single call, before net/http closes the
// connection), which it replaces whole.
func (c *conn) Write(p []byte) (int, error) {
	c.answered.Store(true)
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
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	c.answered.Store(true)
	return io.Copy(c.Conn, r)
}

// CloseWrite keeps the half-close net/http does before hanging up on a
// client that is still sending.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection, gracefully when an answer was written
// since it was last idle (linger): net/http closes a connection whose
// request it refused unread (413, 401 before the body) while the client
// may still be sending it, and a close with unread bytes resets the
// connection, which can destroy the answer before the client reads it.
func (c *conn) Close() error {
	if c.closing.Swap(true) {
		return nil
	}
	if c.answered.Load() && c.l.linger(c) {
		return nil
	}
	return c.close()
}

// close closes the connection now, and gives back its places.
func (c *conn) close() error {
	c.closeOnce.Do(func() {
		c.l.open.Add(-1)
		c.l.shares.release(c.client)
		c.l.forget(c)
	})
	return c.Conn.Close()
}

// A lingering close, as nginx's lingering_close: the answer is followed by
// a half-close (FIN: the client reads the answer, then the end), and what
// the client still sends is read and discarded until it closes its side,
// for at most lingerTime in all and lingerTimeout without a byte, so the
// connection is never reset under an answer the client has not read. A
// lingering connection keeps its place under the caps until it closes.
const (
	lingerTime    = 30 * time.Second
	lingerTimeout = 5 * time.Second
)

// drainBuffers hold what a lingering connection reads and discards.
var drainBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// drain is the lingering close of c.
func (c *conn) drain() {
	defer func() { _ = c.close() }()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	buf := drainBuffers.Get().(*[32 << 10]byte)
	defer drainBuffers.Put(buf)
	end := time.Now().Add(lingerTime)
	for {
		dl := time.Now().Add(lingerTimeout)
		if dl.After(end) {
			dl = end
		}
		if c.Conn.SetReadDeadline(dl) != nil {
			return
		}
		if _, err := c.Conn.Read(buf[:]); err != nil {
			return
		}
	}
}

// enter marks the request's connection as in its handler, and says
// whether the request carried both Content-Length and Transfer-Encoding.
func enter(r *http.Request) (ambiguous bool) {
	c, _ := r.Context().Value(connKey{}).(*conn)
	if c == nil {
		return false
	}
	c.inHandler.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames.next()
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
	c.answered.Store(false)
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

	// lingering are the connections closing gracefully (conn.drain);
	// once stopped, none starts and those left are closed.
	mu        sync.Mutex
	lingering map[*conn]struct{}
	stopped   bool
}

// linger starts c's lingering close, unless the server has stopped.
func (l *listener) linger(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	if l.lingering == nil {
		l.lingering = make(map[*conn]struct{})
	}
	l.lingering[c] = struct{}{}
	go c.drain()
	return true
}

func (l *listener) forget(c *conn) {
	l.mu.Lock()
	delete(l.lingering, c)
	l.mu.Unlock()
}

// stopLingering closes the connections still lingering when the server
// stops: it returns with nothing of the server left running.
func (l *listener) stopLingering() {
	l.mu.Lock()
	l.stopped = true
	left := make([]*conn, 0, len(l.lingering))
	for c := range l.lingering {
		left = append(left, c)
	}
	l.mu.Unlock()
	for _, c := range left {
		_ = c.Conn.Close()
	}
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
