package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/redact"
	"github.com/foodsafe/foodsafe/internal/server"
)

// routeUnparsed is the route of the access line of a request answered
// before it could be routed.
const routeUnparsed = "(unparsed)"

// CannedProblems renders, as problem documents, the answers net/http gives
// by itself to requests it cannot read (431 for a header section over the
// limit, 400 for a malformed request line, path or header or a missing
// Host, 501 for an unknown transfer coding, 505 for an HTTP version other
// than 1.x, 417 for an Expect other than 100-continue), and the refusal of
// a connection over the cap (503): spec 7 wants every failure to be one,
// and spec 4 the client's X-Request-ID echoed. From what the connection
// read of the request, each carries the client's X-Request-ID when it is
// sane (else a new one) in the header and the body, and the path as sent
// as its instance; each is logged, like any request, under that id.
func CannedProblems(configuredBaseURL string, log *slog.Logger) server.CannedRenderer {
	return func(cn server.Canned) server.Answer {
		kind := apperr.KindOfStatus(cn.Status)
		id := cn.Head.RequestID
		if !saneRequestID(id) {
			id = rand.Text()
		}
		instance, pathNote := cannedInstance(cn)
		detail := cannedDetail(cn) + pathNote
		body, _ := json.Marshal(Problem{
			Type:      problemType(configuredBaseURL, kind.Code),
			Title:     kind.Title,
			Status:    cn.Status,
			Detail:    redact.Secrets(detail),
			Instance:  redact.Secrets(instance),
			RequestID: id,
		})
		h := http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}, HeaderRequestID: {id}}
		if cn.Overloaded {
			h.Set("Retry-After", retryAfterUnavailable)
		}
		level := slog.LevelInfo
		if cn.Status >= 500 {
			level = slog.LevelWarn
		}
		if log.Enabled(context.Background(), level) {
			log.LogAttrs(context.Background(), level, "request",
				slog.String("request_id", id),
				slog.String("method", storableText(cn.Head.Method, 20)),
				slog.String("route", routeUnparsed),
				slog.String("path", storableText(instance, 8<<10)),
				slog.Int("status", cn.Status),
				slog.Int("bytes", len(body)),
				slog.String("client_ip", hostOf(cn.Remote)),
				slog.String("error", storableText(detail, 300)))
		}
		return server.Answer{Header: h, Body: body}
	}
}

// cannedDetail says what net/http refused, in the spec's terms.
func cannedDetail(cn server.Canned) string {
	switch {
	case cn.OverShare:
		return "This client (its address, or its IPv6 /64) holds its share of the server's connections and this one was not read (FOODSAFE_CLIENT_CONNECTION_SHARE); reuse the connections it holds, or close some, and retry with backoff."
	case cn.Overloaded:
		return "The server holds its most connections at once and did not read this request (FOODSAFE_MAX_CONNECTIONS); retry with backoff."
	case cn.Status == http.StatusRequestHeaderFieldsTooLarge:
		return "The request line and headers together exceed the limit of 64 KiB."
	case cn.Status == http.StatusNotImplemented:
		return "The request uses a transfer coding this service does not support (only chunked)."
	case cn.Status == http.StatusHTTPVersionNotSupported:
		return "The request line names an HTTP version this service does not speak; use HTTP/1.1 (or HTTP/2)."
	case cn.Status == http.StatusExpectationFailed:
		return "The Expect header asks for something other than 100-continue, the only expectation this service meets."
	case cn.Text != "":
		return "The request could not be parsed: " + cn.Text + "."
	}
	if cn.Head.Line && cn.Head.Target != "" {
		if _, err := url.ParseRequestURI(cn.Head.Target); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return "The request could not be parsed: its target is not a valid URI (" + err.Error() + ")."
		}
	}
	return "The request could not be parsed."
}

// cannedInstance is the request's path as sent (the target up to its
// query; of an absolute URI, its path), and a sentence for the detail
// when that is not all of it or there is none.
func cannedInstance(cn server.Canned) (string, string) {
	h := cn.Head
	if cn.Overloaded {
		return "", " The request was not read, so instance is empty."
	}
	switch {
	case !h.Seen:
		return "", " The request arrived with an earlier one on the connection (pipelined), and its path was not kept: instance is empty."
	case !h.Line || h.Method == "":
		return "", " No request line could be read, so instance is empty."
	case h.Target == "":
		return "", " The request line names no path, so instance is empty."
	}
	path, _, hasQuery := strings.Cut(h.Target, "?")
	if rest, ok := cutScheme(path); ok {
		// absolute-form (RFC 9112 3.2.2): the path follows the authority.
		path = "/"
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			path = rest[i:]
		}
	}
	if h.Truncated && !hasQuery {
		return path, " The request line is longer than the service reads (8 KiB): instance holds the beginning of its path."
	}
	return path, ""
}

// cutScheme strips "http://" or "https://" (any case).
func cutScheme(s string) (string, bool) {
	for _, p := range []string{"http://", "https://"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return s[len(p):], true
		}
	}
	return s, false
}

// hostOf is the IP of a connection's peer.
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}
