package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/redact"
)

// internalDetail is all a client learns of an unexpected failure.
const internalDetail = "An unexpected error occurred. It has been recorded; quote the requestId when reporting it."

// Problem is an RFC 9457 problem document with the members of spec 7.
type Problem struct {
	Type      string              `json:"type"`
	Title     string              `json:"title"`
	Status    int                 `json:"status"`
	Detail    string              `json:"detail"`
	Instance  string              `json:"instance"`
	RequestID string              `json:"requestId"`
	Errors    []apperr.FieldError `json:"errors,omitempty"`
	// ErrorsOmitted counts the violations beyond the first maxProblemErrors,
	// which are not listed: a body with 130,000 unknown members must not
	// become an 11 MB answer.
	ErrorsOmitted int `json:"errorsOmitted,omitempty"`
}

// maxProblemErrors caps the errors listed in one problem document.
const maxProblemErrors = 100

// problemFor renders err for the request in c (the one table is
// apperr.Kinds).
func (a *API) problemFor(c *gin.Context, err error) Problem {
	kind, detail, errs := a.classify(c.Request.Context(), requestID(c), routeOf(c), err)
	errs, omitted := capErrors(errs)
	return Problem{
		ErrorsOmitted: omitted,
		Type:          problemType(a.cfg.BaseURL, kind.Code),
		Title:         kind.Title,
		Status:        kind.Status,
		Detail:        detail,
		Instance:      instancePath(c.Request),
		RequestID:     requestID(c),
		Errors:        errs,
	}
}

// instancePath is a problem's instance (spec 7: the request path): the
// path of the request line as the client sent it, without the query, so
// that it is a URI reference naming what was asked (a%20b stays a%20b,
// demo%2Fbistro stays one segment; the decoded path would say a b, and
// demo/bistro, another path). Bytes a URI may not hold (a quote, a brace,
// non-ASCII, which net/http lets through) are percent-encoded. A
// credential pasted in the path loses its secret, also when the client
// percent-encoded part of it (redaction decodes before it looks, and
// redacts the secret where it stands as sent); a path whose decoding the
// redactor would read otherwise is redacted decoded and escaped again.
func instancePath(r *http.Request) string {
	raw := r.RequestURI
	if strings.HasPrefix(raw, "/") {
		raw, _, _ = strings.Cut(raw, "?")
	} else {
		// The absolute form (GET http://host/path), or a request that
		// came through no request line.
		raw = r.URL.EscapedPath()
	}
	if redact.Contains(r.URL.Path) && !redact.Contains(raw) {
		return (&url.URL{Path: redact.Secrets(r.URL.Path)}).EscapedPath()
	}
	return redact.Secrets(escapeURIPath(raw))
}

// escapeURIPath percent-encodes the bytes of p that RFC 3986 allows in no
// path: everything but unreserved characters, sub-delimiters, ':', '@',
// '/' and the '%' of an existing escape.
func escapeURIPath(p string) string {
	clean := true
	for i := 0; i < len(p) && clean; i++ {
		clean = uriPathByte(p[i])
	}
	if clean {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if c := p[i]; uriPathByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func uriPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@/%", c) >= 0
}

// classify finds err's row of the problem table and the detail and
// violations a client may read, whichever face answers it (a problem
// document, an MCP tool error). Every 5xx logs its cause with the request
// id; the cause of an internal error never reaches the client. Details may
// quote what the client sent: a pasted key never comes back.
func (a *API) classify(ctx context.Context, reqID, route string, err error) (apperr.Kind, string, []apperr.FieldError) {
	e, ok := apperr.As(err)
	if !ok {
		e = &apperr.Error{Code: apperr.Internal, Cause: err}
	}
	kind := apperr.KindOf(e.Code)
	detail := e.Detail
	switch {
	case kind.Code == apperr.Internal:
		a.logFailure(ctx, reqID, route, err)
		detail = internalDetail
	case kind.Status >= 500:
		a.log.LogAttrs(ctx, slog.LevelWarn, string(kind.Code),
			ctxLogAttrs(ctx, reqID, slog.String("route", route), slog.Any("error", err))...)
	}
	errs := slices.Clone(e.Errors)
	for i := range errs {
		// A pointer names a member the client sent, which may be a key
		// pasted as a member name.
		errs[i].Pointer = redact.Secrets(errs[i].Pointer)
		errs[i].Parameter = redact.Secrets(errs[i].Parameter)
		errs[i].Detail = redact.Secrets(errs[i].Detail)
	}
	return kind, redact.Secrets(detail), errs
}

// capErrors keeps the first maxProblemErrors violations and counts the rest.
func capErrors(errs []apperr.FieldError) ([]apperr.FieldError, int) {
	if len(errs) > maxProblemErrors {
		return errs[:maxProblemErrors], len(errs) - maxProblemErrors
	}
	return errs, 0
}

// retryAfterUnavailable is the Retry-After of every 503, in seconds.
const retryAfterUnavailable = "1"

// statusClientClosedRequest records a request whose client went away before
// the answer (nginx's 499); nobody reads the response.
const statusClientClosedRequest = 499

// fail aborts the handler chain with a problem document for err. When the
// client has gone (its request context is cancelled), the failure is the
// consequence, not a fault: it is recorded as 499, not as an internal error.
// A panic is a fault whoever hung up.
func (a *API) fail(c *gin.Context, err error) {
	if _, panicked := errors.AsType[*panicError](err); c.Request.Context().Err() != nil && !panicked && !serverCutKey.value(c) {
		a.log.LogAttrs(context.WithoutCancel(c.Request.Context()), slog.LevelInfo, "client closed request",
			logAttrs(c, slog.String("route", routeOf(c)), slog.Any("error", err))...)
		c.AbortWithStatus(statusClientClosedRequest)
		return
	}
	closeUnread(c)
	p := a.problemFor(c, err)
	if p.Status == http.StatusServiceUnavailable {
		// A first delay for clients backing off (spec 7: exponential
		// backoff with jitter); outages of a pool or a failover last seconds.
		c.Header("Retry-After", retryAfterUnavailable)
	}
	c.Header("Content-Type", "application/problem+json")
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(p.Status, p)
}

// problemType is the `type` of a problem of the given code:
// FOODSAFE_BASE_URL + "/problems/" + code, or the relative reference
// "/problems/" + code when no base URL is configured. It never comes from
// the request (its Host, or the address the client reached): a problem
// type is an identifier clients and caches compare and keep, and a caller
// must not be able to choose the one another client sees. A relative
// reference resolves against the address each client used (RFC 9457
// 3.1.1), so it still dereferences to GET /problems/<code>.
func problemType(configured string, code apperr.Code) string {
	return configured + "/problems/" + string(code)
}
