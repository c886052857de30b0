package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/redact"
)

const (
	// HeaderRequestID is echoed or generated on every response.
	HeaderRequestID = "X-Request-ID"
	maxRequestIDLen = 200
)

// saneRequestID accepts 1-200 visible ASCII characters, so a client's id is
// safe to echo into headers, JSON and logs; one that holds a credential is
// replaced too, so a key pasted there is never echoed, logged or audited.
func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return !redact.Contains(s)
}

// withRequestID echoes a sane client X-Request-ID or generates one, and
// keeps the trace id of a valid traceparent header, before anything else
// runs, so every log line and problem carries them.
func withRequestID(c *gin.Context) {
	id := c.GetHeader(HeaderRequestID)
	if !saneRequestID(id) {
		id = rand.Text()
	}
	requestIDKey.set(c, id)
	c.Header(HeaderRequestID, id)
	trackBody(c)
	if t := traceID(c.Request.Header); t != "" {
		// In the request's context, which travels where the gin context
		// does not (an MCP tool runs inside the SDK).
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), traceIDKey{}, t))
	}
	c.Next()
}

// instrument feeds the HTTP families of the metrics. It runs first, so it
// times every middleware and sees the status a panic becomes; it is only
// installed when metrics are on.
func (a *API) instrument(c *gin.Context) {
	start := time.Now()
	a.metrics.HTTPStarted()
	defer func() {
		a.metrics.HTTPFinished(routeOf(c), c.Request.Method, c.Writer.Status(), time.Since(start), c.Writer.Size())
	}()
	c.Next()
}

// recoverer turns a panic into a 500 problem that says nothing about the
// internals; its value and stack are the failure's one ERROR line
// (logFailure). http.ErrAbortHandler keeps its meaning.
func (a *API) recoverer(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			panic(rec)
		}
		err := recovered(rec)
		if c.Writer.Written() {
			a.logFailure(c.Request.Context(), requestID(c), routeOf(c), err)
			c.Abort()
			return
		}
		a.fail(c, err)
	}()
	c.Next()
}

// accessLog writes one structured line per request. It logs the path
// without its query string (signed URLs and cursors live there) and never
// any header, so credentials cannot leak into logs. A 5xx line is a
// WARN: the failure itself has its own line (an ERROR with the cause for
// an internal error or a panic, a WARN for an unavailable dependency),
// and the access line is not a second report of it.
func (a *API) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	status := c.Writer.Status()
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelWarn
	}
	if !a.log.Enabled(c.Request.Context(), level) {
		return // a line nobody writes is not put together (FOODSAFE_LOG_LEVEL=warn)
	}
	attrs := logAttrs(c,
		slog.String("method", c.Request.Method),
		slog.String("route", routeOf(c)),
		slog.String("path", c.Request.URL.Path),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
		slog.Int("bytes", c.Writer.Size()),
		slog.String("client_ip", clientAddr(c)),
	)
	attrs = append(attrs, a.logAttrsFromContext(c)...)
	a.log.LogAttrs(c.Request.Context(), level, "request", attrs...)
}

// logAttrsFromContext adds what later middleware learned (the key's public
// id; for MCP, the method and tool) to the access log line.
func (a *API) logAttrsFromContext(c *gin.Context) []slog.Attr {
	var attrs []slog.Attr
	if v, ok := logKeyIDKey.get(c); ok {
		attrs = append(attrs, slog.String("key", v))
	}
	if v := logMCPKey.value(c); v != "" {
		attrs = append(attrs, slog.String("mcp", v))
	}
	return attrs
}

// strictQuery rejects query strings that do not parse: gin's accessors
// would otherwise drop the broken pair silently and answer as if the
// parameter were absent.
func (a *API) strictQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		a.fail(c, apperr.New(apperr.Invalid, "The query string is malformed: %s.", queryErrorText(err)))
		return
	}
	c.Next()
}

// queryErrorText keeps the parser's complaint but never echoes more than a
// short fragment of the client's input.
func queryErrorText(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// auditTrail records every request except successful health probes (spec
// 4.1), after the response status is known. It runs outside the recoverer
// so panics are recorded as the 500s they became. A request that reached
// no key's data (byShape) is counted by its shape rather than recorded:
// a flood from one client is a few rows a minute, not one per request.
func (a *API) auditTrail(c *gin.Context) {
	c.Next()
	route := routeOf(c)
	status := c.Writer.Status()
	if strings.HasPrefix(route, "/health/") && status < 400 {
		return
	}
	who := clientKey.value(c)
	outcome := auditOutcomeKey.value(c)
	if byShape(c, route, status) {
		key := logKeyIDKey.value(c)
		if outcome == string(auth.ReasonUnknown) {
			key = "" // an id that names no key: one shape per guess otherwise
		}
		a.audit.Count(audit.Shape{Minute: a.now(), Client: who.prefix, Method: c.Request.Method, Route: route,
			Status: status, Outcome: outcome, KeyPublicID: key})
		return
	}
	a.audit.Record(audit.Event{
		At:           a.now(),
		Method:       c.Request.Method,
		Route:        route,
		Status:       status,
		RequestID:    requestID(c),
		RestaurantID: storableText(redact.Secrets(cmp.Or(c.Param("restaurantId"), auditRestaurantKey.value(c))), 200),
		KeyPublicID:  logKeyIDKey.value(c),
		Outcome:      outcome,
		ClientIP:     who.addr,
	})
}

// byShape says whether a request is audited by its shape (audit.Writer's
// Count): every 429, and every request no key was authenticated for
// (refused credentials, unmatched paths, the documentation, health
// failures), except a download a signed URL allowed, which reads a
// restaurant's file and is recorded with it.
func byShape(c *gin.Context, route string, status int) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	if _, authenticated := principalKey.get(c); authenticated {
		return false
	}
	return !(strings.HasPrefix(route, "/v1/files/") && status < 400)
}

// storableText makes client-controlled text fit a text column: valid UTF-8
// (invalid bytes become U+FFFD), no NUL, at most n characters. Path
// parameters are decoded bytes and can hold anything.
func storableText(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n])
	}
	return s
}

// ingest counts how an ingest write ended (foodsafe_ingest_writes_total):
// the answer's Idempotent-Replayed header tells a replay from a new write,
// and a rejection's reason is the problem type the client receives (fail
// decides the same way: a client that hung up first is a 499).
func (a *API) ingest(w metrics.Write, h handler) handler {
	if a.metrics == nil {
		return h
	}
	return func(c *gin.Context) error {
		err := h(c)
		o, reason := writeOutcome(err, c.Writer.Header().Get(HeaderReplayed) == "true", c.Request.Context().Err() != nil)
		a.metrics.IngestWrite(w, c.Param("collection"), o, reason)
		return err
	}
}
