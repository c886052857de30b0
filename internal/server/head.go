package server

import (
	"bytes"
	"strings"
)

// RequestHead is what a connection read of the request net/http was
// parsing when it gave up: enough to answer it in the service's own terms
// (its path as sent, its X-Request-ID) without keeping the whole header
// section. Method and Target are the first two words of the request line
// as sent, never decoded.
type RequestHead struct {
	// Seen says the connection read bytes of this request since the
	// previous one was answered. A request read together with an earlier
	// one (pipelined) was not seen: nothing else is known of it.
	Seen           bool
	Method, Target string
	// Line says a request line was read (all of it, or its first
	// maxLineKept bytes): without one, Method and Target are empty.
	Line bool
	// Truncated says the request line was longer than maxLineKept bytes,
	// or did not end: Target holds its beginning only.
	Truncated bool
	// RequestID is the value of the first X-Request-ID header as sent
	// (at most maxIDKept bytes; longer ones are cut, and refused by any
	// sane check), "" when there was none.
	RequestID string
	// ContentLength and TransferEncoding say the header section named
	// them; a request with both is ambiguous (RFC 9112 6.3).
	ContentLength, TransferEncoding bool
}

const (
	// maxLineKept bounds the request line a connection keeps: a path a
	// partner sends is far shorter, and a request line over it is
	// answered with its first maxLineKept bytes.
	maxLineKept = 8 << 10
	// maxFieldKept bounds a header line kept: the longest name of
	// interest plus a request id of up to maxIDKept bytes.
	maxFieldKept = 256
	maxIDKept    = 201
)

// headScanner follows the bytes of one request head as they are read from
// the connection, in constant memory: the request line (its first
// maxLineKept bytes) and, of the header fields, only the few it reports.
// It stops at the blank line that ends the head; reset starts it over for
// the next request on the connection.
type headScanner struct {
	line    []byte // the line being read, at most its cap
	lineLen int    // its length so far, kept or not
	lines   int    // lines completed
	done    bool   // the blank line was read
	// after says bytes followed the blank line in what was read.
	after bool
	// blind says this request began in bytes read with the previous one
	// (pipelined): what is read now is its middle, not its head.
	blind bool
	head  RequestHead
}

// reset starts over for the next request. When the previous one declared
// no body but bytes followed its head, those bytes began the next request
// (pipelining): its head cannot be followed, and it is not tried.
func (s *headScanner) reset() {
	blind := s.done && s.after && !s.head.ContentLength && !s.head.TransferEncoding
	line := s.line[:0]
	*s = headScanner{line: line, blind: blind}
}

// feed follows p, the next bytes read from the connection.
func (s *headScanner) feed(p []byte) {
	if s.done || s.blind {
		s.after = s.after || len(p) > 0
		return
	}
	for len(p) > 0 && !s.done {
		s.head.Seen = true
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := s.keep() - len(s.line); room > 0 {
			s.line = append(s.line, chunk[:min(room, len(chunk))]...)
		}
		s.lineLen += len(chunk)
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
		if s.done && len(p) > 0 {
			s.after = true
		}
	}
}

// keep is how much of the current line is kept.
func (s *headScanner) keep() int {
	if s.lines == 0 {
		return maxLineKept
	}
	return maxFieldKept
}

func (s *headScanner) endLine() {
	line := bytes.TrimSuffix(s.line, []byte("\r"))
	full := s.lineLen <= len(s.line)
	if s.lines == 0 {
		s.requestLine(line, !full)
	} else if len(line) == 0 && full {
		s.done = true
	} else {
		s.field(line)
	}
	s.lines++
	s.line, s.lineLen = s.line[:0], 0
}

func (s *headScanner) requestLine(line []byte, truncated bool) {
	s.head.Line, s.head.Truncated = true, truncated
	method, rest, _ := strings.Cut(string(line), " ")
	target, _, _ := strings.Cut(rest, " ")
	s.head.Method, s.head.Target = method, target
}

func (s *headScanner) field(line []byte) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	switch {
	case bytes.EqualFold(name, []byte("X-Request-ID")):
		if s.head.RequestID == "" {
			v := bytes.Trim(value, " \t")
			s.head.RequestID = string(v[:min(len(v), maxIDKept)])
		}
	case bytes.EqualFold(name, []byte("Content-Length")):
		s.head.ContentLength = true
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		s.head.TransferEncoding = true
	}
}

// snapshot is what was read so far, a request line cut short included.
func (s *headScanner) snapshot() RequestHead {
	h := s.head
	if s.lines == 0 && s.head.Seen {
		// The request line never ended (over the header limit, or the
		// connection failed): what was kept of it is all there is.
		cp := *s
		cp.requestLine(bytes.TrimSuffix(cp.line, []byte("\r")), true)
		h = cp.head
	}
	return h
}
