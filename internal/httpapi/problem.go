package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
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
}

// problemFor renders err for the request in c (the one table is
// apperr.Kinds). Every 5xx logs its cause with the request id; the cause
// of an internal error never reaches the client.
func (a *API) problemFor(c *gin.Context, err error) Problem {
	e, ok := apperr.As(err)
	if !ok {
		e = &apperr.Error{Code: apperr.Internal, Cause: err}
	}
	kind := apperr.KindOf(e.Code)
	detail := e.Detail
	switch {
	case kind.Code == apperr.Internal:
		a.log.LogAttrs(c.Request.Context(), slog.LevelError, "internal error",
			logAttrs(c, slog.String("route", routeOf(c)), slog.Any("error", err))...)
		detail = internalDetail
	case kind.Status >= 500:
		a.log.LogAttrs(c.Request.Context(), slog.LevelWarn, string(kind.Code),
			logAttrs(c, slog.String("route", routeOf(c)), slog.Any("error", err))...)
	}
	return Problem{
		Type:      a.baseURL(c) + "/problems/" + string(kind.Code),
		Title:     kind.Title,
		Status:    kind.Status,
		Detail:    detail,
		Instance:  c.Request.URL.Path,
		RequestID: requestID(c),
		Errors:    e.Errors,
	}
}

// retryAfterUnavailable is the Retry-After of every 503, in seconds.
const retryAfterUnavailable = "1"

// statusClientClosedRequest records a request whose client went away before
// the answer (nginx's 499); nobody reads the response.
const statusClientClosedRequest = 499

// fail aborts the handler chain with a problem document for err. When the
// client has gone (its request context is cancelled), the failure is the
// consequence, not a fault: it is recorded as 499, not as an internal error.
func (a *API) fail(c *gin.Context, err error) {
	if c.Request.Context().Err() != nil {
		a.log.LogAttrs(context.WithoutCancel(c.Request.Context()), slog.LevelInfo, "client closed request",
			logAttrs(c, slog.String("route", routeOf(c)), slog.Any("error", err))...)
		c.AbortWithStatus(statusClientClosedRequest)
		return
	}
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

// baseURL is FOODSAFE_BASE_URL, or the scheme and Host of the request.
func (a *API) baseURL(c *gin.Context) string {
	if a.cfg.BaseURL != "" {
		return a.cfg.BaseURL
	}
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}
