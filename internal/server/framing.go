package server

import (
	"bytes"
	"strconv"
	"strings"
)

// framing follows the requests of a connection through their bodies, as
// net/http reads them, to tell which ones carried both Content-Length and
// Transfer-Encoding (AmbiguousFraming). net/http drops Content-Length from
// such a request before any handler sees it, and reads ahead: a request
// pipelined behind another is read with it, while the first is still in
// its handler. So every byte read from the connection passes through
// framing, in constant memory (no header is kept, only the first bytes of
// the line being read), and each request whose head ended waits in
// pending until its handler is entered (next). What net/http refuses (a
// malformed chunk, an unknown coding, an unreadable length) ends the
// connection anyway: framing stops following there (lost) and says
// nothing of what follows. Its zero value follows a new connection.
type framing struct {
	state framingState
	// line is the line being read (its first maxFieldKept bytes), and
	// lineLen its length so far, kept or not.
	line    []byte
	lineLen int
	skip    bool // the line is only counted (feedLine)
	// Of the head being read: its request line was read, and the
	// framings it named.
	started, hasLength, chunked bool
	length                      int64
	// remaining is what is left of a Content-Length body or of a chunk.
	remaining int64
	// pending[first:] holds, in order, whether each request whose head
	// ended, and whose handler was not entered yet, was ambiguous.
	pending []bool
	first   int
}

type framingState int

const (
	inHead framingState = iota
	inBody
	inChunkSize
	inChunkData
	inChunkEnd
	inTrailer
	lost
)

// maxPending bounds the requests read ahead of their handlers. net/http
// reads at most its buffer (4 KiB) ahead, far fewer requests than this.
const maxPending = 1024

// feed follows p, the next bytes read from the connection.
func (f *framing) feed(p []byte) {
	for len(p) > 0 && f.state != lost {
		if f.state != inBody && f.state != inChunkData {
			p = f.feedLine(p)
			continue
		}
		n := min(int64(len(p)), f.remaining)
		p, f.remaining = p[n:], f.remaining-n
		switch {
		case f.remaining > 0:
		case f.state == inBody:
			f.startHead()
		default:
			f.state = inChunkEnd
		}
	}
}

// feedLine reads p up to the end of the current line, and returns what
// follows it.
func (f *framing) feedLine(p []byte) []byte {
	i := bytes.IndexByte(p, '\n')
	chunk, rest := p, []byte(nil)
	if i >= 0 {
		chunk, rest = p[:i], p[i+1:]
	}
	if f.lineLen == 0 && len(chunk) > 0 {
		// A request line, or a field that cannot be one of the two, is
		// only counted: most of a head is not copied.
		f.skip = f.state == inHead && (!f.started || !strings.ContainsRune("cCtT\r", rune(chunk[0])))
	}
	if f.line == nil {
		f.line = make([]byte, 0, maxFieldKept)
	}
	if room := maxFieldKept - len(f.line); room > 0 && !f.skip {
		f.line = append(f.line, chunk[:min(room, len(chunk))]...)
	}
	f.lineLen += len(chunk)
	if i < 0 {
		return nil
	}
	if f.skip {
		f.started = true
	} else {
		f.endLine(bytes.TrimSuffix(f.line, []byte("\r")), f.lineLen > len(f.line))
	}
	f.line, f.lineLen, f.skip = f.line[:0], 0, false
	return rest
}

// endLine takes a whole line (its kept bytes; long when it was longer).
func (f *framing) endLine(line []byte, long bool) {
	switch f.state {
	case inHead:
		f.headLine(line, long)
	case inChunkSize:
		size, _, _ := bytes.Cut(line, []byte(";"))
		n, err := strconv.ParseUint(string(bytes.TrimSpace(size)), 16, 63)
		switch {
		case err != nil || long:
			f.state = lost
		case n == 0:
			f.state = inTrailer
		default:
			f.state, f.remaining = inChunkData, int64(n)
		}
	case inChunkEnd:
		f.state = inChunkSize
		if len(line) != 0 {
			f.state = lost
		}
	case inTrailer:
		if len(line) == 0 && !long {
			f.startHead()
		}
	}
}

// headLine takes one line of a request head.
func (f *framing) headLine(line []byte, long bool) {
	switch {
	case !f.started:
		f.started = true
	case len(line) != 0 || long:
		name, value, _ := bytes.Cut(line, []byte(":"))
		if bytes.EqualFold(name, []byte("Transfer-Encoding")) {
			f.chunked = true
		}
		if bytes.EqualFold(name, []byte("Content-Length")) {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
			if err != nil || n < 0 || long {
				f.state = lost // net/http refuses it
			}
			f.hasLength, f.length = true, n
		}
	default:
		f.endHead()
	}
}

// endHead is the blank line that ends a head: its request waits for its
// handler, and its body follows.
func (f *framing) endHead() {
	if len(f.pending)-f.first >= maxPending {
		f.state = lost
		return
	}
	f.pending = append(f.pending, f.chunked && f.hasLength)
	switch {
	case f.chunked:
		f.state = inChunkSize
	case f.length > 0:
		f.state, f.remaining = inBody, f.length
	default:
		f.startHead()
	}
}

func (f *framing) startHead() {
	f.state, f.started, f.hasLength, f.chunked, f.length = inHead, false, false, false, 0
}

// next says whether the next request to be handled carried both
// framings; false when framing did not see its head end (lost).
func (f *framing) next() bool {
	if f.first >= len(f.pending) {
		return false
	}
	v := f.pending[f.first]
	f.first++
	if f.first == len(f.pending) || f.first >= 64 && 2*f.first >= len(f.pending) {
		f.pending, f.first = f.pending[:copy(f.pending, f.pending[f.first:])], 0
	}
	return v
}
