// Package apperr holds the service's one error type. Every layer returns
// *Error for failures a client should hear about; the HTTP layer maps each
// Code to a problem document in a single table (httpapi/problem.go), and
// anything that is not an *Error becomes an opaque 500 whose cause is only
// logged.
package apperr

import (
	"errors"
	"fmt"
)

// Code identifies a class of failure. The values are the problem type
// suffixes of the spec (section 7), so they are stable wire identifiers.
type Code string

// The codes of spec section 7.
const (
	Invalid               Code = "invalid-request"
	Unauthorized          Code = "unauthorized"
	Forbidden             Code = "forbidden"
	NotFound              Code = "not-found"
	MethodNotAllowed      Code = "method-not-allowed"
	Conflict              Code = "conflict"
	PayloadTooLarge       Code = "payload-too-large"
	PreconditionFailed    Code = "precondition-failed"
	RangeNotSatisfiable   Code = "range-not-satisfiable"
	RateLimited           Code = "rate-limit-exceeded"
	DependencyUnavailable Code = "dependency-unavailable"
	Internal              Code = "internal-error"
)

// FieldError locates one violation inside a request body or parameter set.
type FieldError struct {
	// Pointer is an RFC 6901 JSON Pointer into the request body, or empty
	// when Parameter names a query/path/header parameter instead.
	Pointer string `json:"pointer,omitempty"`
	// Parameter names the offending query, path or header parameter.
	Parameter string `json:"parameter,omitempty"`
	// Detail says what is wrong, in prose.
	Detail string `json:"detail"`
}

// Error is a failure with a client-facing code and detail. Cause, when set,
// is for logs only and never reaches a response.
type Error struct {
	Code   Code
	Detail string
	Errors []FieldError
	Cause  error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Detail)
}

// Unwrap exposes the cause to errors.Is/As.
func (e *Error) Unwrap() error { return e.Cause }

// New builds an *Error with a formatted detail.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// Param builds a 400 that names the offending parameter, both in the detail
// and in the machine-readable errors list.
func Param(name, format string, args ...any) *Error {
	d := fmt.Sprintf(format, args...)
	return &Error{
		Code:   Invalid,
		Detail: fmt.Sprintf("parameter %q: %s", name, d),
		Errors: []FieldError{{Parameter: name, Detail: d}},
	}
}

// NotFoundDetail is the single detail of every 404. It must not vary with
// the reason (no grant, unknown restaurant, unknown record), or a 404 would
// confirm that a restaurant exists (spec 5.3).
const NotFoundDetail = "The requested resource does not exist or is not accessible with this key."

// ErrNotFound is the one 404.
var ErrNotFound = &Error{Code: NotFound, Detail: NotFoundDetail}

// As returns err as an *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// WithCause returns a copy of e carrying cause for the logs.
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.Cause = cause
	return &c
}
