package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// CannedRenderer turns one of the answers net/http writes by itself, before
// any handler runs, into a body and content type of ours. status and text
// are what net/http would have said; local is the connection's address
// (the request, and so its Host, could not be read).
type CannedRenderer func(status int, text string, local net.Addr) (contentType string, body []byte)

// net/http answers requests it cannot parse (a header section over
// MaxHeaderBytes, a malformed request line or header, a missing Host, an
// unsupported transfer coding) itself, in text/plain, with this header
// section right after the status line. A response of a handler can never
// look like that: net/http writes its headers sorted, so Connection always
// comes before Content-Type, and always with a Date.
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// cannedListener wraps every connection so those canned answers are
// replaced with the renderer's (for us: problem documents, spec 7).
type cannedListener struct {
	net.Listener
	render CannedRenderer
}

func (l cannedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &cannedConn{Conn: c, render: l.render}, nil
}

type cannedConn struct {
	net.Conn
	render CannedRenderer
}

// Write passes every write through, except one canned answer, which it
// replaces whole (net/http writes each in a single call, then closes).
func (c *cannedConn) Write(p []byte) (int, error) {
	status, text, ok := parseCanned(p)
	if !ok {
		return c.Conn.Write(p)
	}
	ct, body := c.render(status, text, c.LocalAddr())
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		status, http.StatusText(status), ct, len(body))
	b.Write(body)
	if _, err := c.Conn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadFrom keeps the kernel's sendfile path for file downloads (net/http
// uses it when the connection offers it); canned answers never come this way.
func (c *cannedConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(c.Conn, r) }

// CloseWrite keeps the half-close net/http does before hanging up on a
// client that is still sending.
func (c *cannedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// parseCanned recognises a canned answer and returns its status and the
// text net/http gave as its body.
func parseCanned(p []byte) (int, string, bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return 0, "", false
	}
	eol := bytes.Index(p, []byte("\r\n"))
	if eol < 0 || !bytes.HasPrefix(p[eol:], []byte(cannedHeaders)) {
		return 0, "", false
	}
	line := p[len("HTTP/1.1 "):eol]
	if len(line) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(line[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	return status, string(p[eol+len(cannedHeaders):]), true
}
