package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
)

// problemKind is one row of the code -> HTTP table.
type problemKind struct {
	Status int
	Title  string
}

// problemKinds is the single table mapping error codes to problem documents
// (spec 7). Nothing else in the service chooses an error status.
var problemKinds = map[apperr.Code]problemKind{
	apperr.Invalid:               {http.StatusBadRequest, "Invalid request"},
	apperr.Unauthorized:          {http.StatusUnauthorized, "Unauthorized"},
	apperr.Forbidden:             {http.StatusForbidden, "Forbidden"},
	apperr.NotFound:              {http.StatusNotFound, "Not found"},
	apperr.MethodNotAllowed:      {http.StatusMethodNotAllowed, "Method not allowed"},
	apperr.Conflict:              {http.StatusConflict, "Conflict"},
	apperr.PayloadTooLarge:       {http.StatusRequestEntityTooLarge, "Payload too large"},
	apperr.PreconditionFailed:    {http.StatusPreconditionFailed, "Precondition failed"},
	apperr.RangeNotSatisfiable:   {http.StatusRequestedRangeNotSatisfiable, "Range not satisfiable"},
	apperr.RateLimited:           {http.StatusTooManyRequests, "Rate limit exceeded"},
	apperr.DependencyUnavailable: {http.StatusServiceUnavailable, "Dependency unavailable"},
	apperr.Internal:              {http.StatusInternalServerError, "Internal error"},
}

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

// problemFor renders err for the request in c. Causes of internal errors are
// logged with the request id, never returned.
func (a *API) problemFor(c *gin.Context, err error) Problem {
	e, ok := apperr.As(err)
	switch {
	case !ok && store.Unavailable(err):
		e = &apperr.Error{Code: apperr.DependencyUnavailable, Detail: "The database is briefly unavailable; retry with backoff.", Cause: err}
		a.log.WarnContext(c.Request.Context(), "database unavailable", slog.String("request_id", requestID(c)), slog.Any("error", err))
	case !ok:
		e = &apperr.Error{Code: apperr.Internal, Cause: err}
	}
	kind, known := problemKinds[e.Code]
	if !known {
		kind = problemKinds[apperr.Internal]
		e = &apperr.Error{Code: apperr.Internal, Cause: err}
	}
	detail := e.Detail
	if e.Code == apperr.Internal {
		a.log.ErrorContext(c.Request.Context(), "internal error",
			slog.String("request_id", requestID(c)),
			slog.String("route", routeOf(c)),
			slog.Any("error", err))
		detail = internalDetail
	}
	return Problem{
		Type:      a.baseURL(c) + "/problems/" + string(e.Code),
		Title:     kind.Title,
		Status:    kind.Status,
		Detail:    detail,
		Instance:  c.Request.URL.Path,
		RequestID: requestID(c),
		Errors:    e.Errors,
	}
}

// statusClientClosedRequest records a request whose client went away before
// the answer (nginx's 499); nobody reads the response.
const statusClientClosedRequest = 499

// fail aborts the handler chain with a problem document for err. When the
// client has gone (its request context is cancelled), the failure is the
// consequence, not a fault: it is recorded as 499, not as an internal error.
func (a *API) fail(c *gin.Context, err error) {
	if c.Request.Context().Err() != nil {
		a.log.InfoContext(context.WithoutCancel(c.Request.Context()), "client closed request",
			slog.String("request_id", requestID(c)), slog.String("route", routeOf(c)), slog.Any("error", err))
		c.AbortWithStatus(statusClientClosedRequest)
		return
	}
	p := a.problemFor(c, err)
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
