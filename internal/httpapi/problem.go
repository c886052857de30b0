package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"

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
		Instance:      redact.Secrets(c.Request.URL.Path),
		RequestID:     requestID(c),
		Errors:        errs,
	}
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

// ctxServerCut marks a request the server itself stopped reading (an
// upload idle past its timeout): its context is cancelled, but the client
// is still there to read why.
const ctxServerCut = "foodsafe.serverCut"

// fail aborts the handler chain with a problem document for err. When the
// client has gone (its request context is cancelled), the failure is the
// consequence, not a fault: it is recorded as 499, not as an internal error.
// A panic is a fault whoever hung up.
func (a *API) fail(c *gin.Context, err error) {
	if _, panicked := errors.AsType[*panicError](err); c.Request.Context().Err() != nil && !panicked && !c.GetBool(ctxServerCut) {
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

// baseURL is FOODSAFE_BASE_URL, or the scheme and Host of the request. It
// prefixes signed download URLs, which go back to the caller who asked;
// problem types never use it (problemType).
func (a *API) baseURL(c *gin.Context) string {
	local, _ := c.Request.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return baseURL(a.cfg.BaseURL, c.Request.TLS != nil, c.Request.Host, local)
}

// baseURL is the configured base URL, else the scheme and Host the client
// used, else (an HTTP/1.0 request without Host, or one that could not be
// parsed) the address the client reached.
func baseURL(configured string, tls bool, host string, local net.Addr) string {
	if configured != "" {
		return configured
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if host == "" && local != nil {
		host = local.String()
	}
	if host == "" {
		host = "localhost"
	}
	return scheme + "://" + host
}
