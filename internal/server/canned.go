package server

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
)

// Canned is an answer the service gives without any handler: one net/http
// writes by itself to a request it could not read (status and text are
// what net/http would have said), or the refusal of a connection over
// the cap (Overloaded).
type Canned struct {
	Status int
	// Text is net/http's reason ("missing required Host header"), when
	// it gave one.
	Text string
	// Head is what the connection read of the request.
	Head RequestHead
	// Overloaded: the connection was refused unread, the server holding
	// its most connections (Options.MaxConns), or, with OverShare, its
	// client holding its share of them (Options.ClientConns).
	Overloaded, OverShare bool
	Local, Remote         net.Addr
}

// Answer is a canned answer in the service's terms: its headers (the
// server adds Content-Length and Connection: close) and body.
type Answer struct {
	Header http.Header
	Body   []byte
}

// CannedRenderer renders a Canned answer (for us: a problem document,
// spec 7, under a request id, with a log line).
type CannedRenderer func(Canned) Answer

// parseCanned recognises an answer net/http wrote between handlers and
// returns its status and the text it gave as its body (after ": " in the
// status line, or the body itself). Anything else is not one of its
// answers, and is left alone.
func parseCanned(p []byte) (int, string, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1."))
	if !ok || len(rest) < 6 || (rest[0] != '0' && rest[0] != '1') || rest[1] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(rest[2:5]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	line, _, _ := bytes.Cut(rest, []byte("\r\n"))
	text := ""
	if _, reason, ok := bytes.Cut(line[5:], []byte(": ")); ok {
		text = string(reason)
	}
	return status, text, true
}

// cannedResponse writes an answer as an HTTP/1.1 response that closes the
// connection (net/http closes it after its own answers anyway).
func cannedResponse(status int, a Answer) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	names := make([]string, 0, len(a.Header))
	for k := range a.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range a.Header[k] {
			if !bytes.ContainsAny([]byte(v), "\r\n") {
				fmt.Fprintf(&b, "%s: %s\r\n", k, v)
			}
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(a.Body))
	b.Write(a.Body)
	return b.Bytes()
}
