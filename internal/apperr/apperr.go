// Package apperr holds the service's one error type and the one table of
// problem kinds. Every layer returns *Error for failures a client should
// hear about; each Code has exactly one row in Kinds (status, title, when it
// happens, whether to retry), which the problem documents, the OpenAPI
// document and the problem pages all read. Anything that is not an *Error
// becomes an opaque 500 whose cause is only logged.
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
	Invalid            Code = "invalid-request"
	Unauthorized       Code = "unauthorized"
	Forbidden          Code = "forbidden"
	DownloadURLExpired Code = "download-url-expired"
	NotFound           Code = "not-found"
	MethodNotAllowed   Code = "method-not-allowed"
	Conflict           Code = "conflict"
	// UploadOffsetMismatch is the draft's mismatching-upload-offset
	// (draft-ietf-httpbis-resumable-upload).
	UploadOffsetMismatch  Code = "mismatching-upload-offset"
	PayloadTooLarge       Code = "payload-too-large"
	PreconditionFailed    Code = "precondition-failed"
	RangeNotSatisfiable   Code = "range-not-satisfiable"
	HeadersTooLarge       Code = "request-header-fields-too-large"
	RateLimited           Code = "rate-limit-exceeded"
	UploadQuotaExceeded   Code = "upload-quota-exceeded"
	UploadTooSlow         Code = "upload-too-slow"
	DependencyUnavailable Code = "dependency-unavailable"
	Internal              Code = "internal-error"
	NotImplemented        Code = "not-implemented"
	HTTPVersion           Code = "http-version-not-supported"
)

// Kind is one row of the problem table.
type Kind struct {
	Code   Code
	Status int
	Title  string
	// When says what causes it, for documentation.
	When string
	// Retry says whether and how a client retries (spec 7).
	Retry string
}

// Kinds is the table of problem types, in status order. Nothing else in
// the service chooses an error status.
var Kinds = []Kind{
	{Invalid, 400, "Invalid request", "A parameter, header or body is missing or malformed; `errors` lists every violation.", "No: fix the request."},
	{Unauthorized, 401, "Unauthorized", "No Authorization header, or a malformed, unknown, revoked or expired key, or a key without grants.", "No."},
	{Forbidden, 403, "Forbidden", "The key holds a grant for the restaurant but not the scope this needs.", "No."},
	{DownloadURLExpired, 403, "Download URL expired or altered", "A signed download URL (GET /v1/files/...) used after its urlExpiresAt (it works 15 minutes), or altered: a character changed or a part missing, so its signature does not match.", "Not this URL: list the files again (GET .../records/{recordId}/assets or .../deliveries/{deliveryId}/images) for a fresh url, then download with it."},
	{NotFound, 404, "Not found", "No grant for the restaurant, or no such resource; indistinguishable.", "No."},
	{MethodNotAllowed, 405, "Method not allowed", "The path exists but not with this method; the Allow header lists the methods it has.", "No: use a method from Allow."},
	{UploadTooSlow, 408, "Upload too slow", "An upload's bytes stopped arriving for FOODSAFE_UPLOAD_IDLE_TIMEOUT, or arrived slower than FOODSAFE_UPLOAD_MIN_RATE bytes a second past FOODSAFE_UPLOAD_RATE_GRACE; nothing was stored and the connection is closed, so the upload slot goes to uploads that move.", "Yes: resend the whole file, on a better connection if one can be had."},
	{Conflict, 409, "Conflict", "The request conflicts with an existing resource (immutable delivery or image, mutationId reused for another change, asset already uploaded with other bytes, an upload for a file the record no longer names).", "No."},
	{UploadOffsetMismatch, 409, "Mismatching upload offset", "A PATCH on a resumable upload (draft-ietf-httpbis-resumable-upload) names an Upload-Offset other than the bytes the server kept; the answer's Upload-Offset is the right one.", "Yes: PATCH again from the answer's Upload-Offset (or the one HEAD on the upload says)."},
	{PreconditionFailed, 412, "Precondition failed", "If-Match or If-Unmodified-Since does not match the file.", "No."},
	{PayloadTooLarge, 413, "Payload too large", "The body exceeds the configured limit.", "No."},
	{RangeNotSatisfiable, 416, "Range not satisfiable", "The Range lies outside the file.", "No: ask for a range within Content-Range's size."},
	{RateLimited, 429, "Rate limit exceeded", "The request budget is spent, or the key already has its most uploads in progress at once (FOODSAFE_UPLOADS_PER_KEY), or it has one in progress and the server's free upload slots are those kept for keys with none (FOODSAFE_UPLOADS_RESERVED).", "Yes, after the seconds in Retry-After."},
	{UploadQuotaExceeded, 429, "Upload quota exceeded", "The key has attached its most bytes of files to the restaurant this UTC day (FOODSAFE_UPLOAD_QUOTA_BYTES, counting the bytes of its resumable uploads not yet completed), or this file would take it past them, or it has the most resumable uploads open on the restaurant; nothing was stored.", "Yes, after the seconds in Retry-After (the next UTC day, or when the first open resumable upload expires), or at once after completing or cancelling an open resumable upload; other keys are not affected."},
	{HeadersTooLarge, 431, "Request header fields too large", "The request line and headers together exceed 64 KiB; answered before routing (instance is the path as sent).", "No."},
	{Internal, 500, "Internal error", "Unexpected failure, already recorded.", "Once with backoff, then report the requestId."},
	{NotImplemented, 501, "Not implemented", "The request uses a transfer coding the service does not support; answered before routing (instance is the path as sent).", "No."},
	{DependencyUnavailable, 503, "Dependency unavailable", "A needed component (the database, the object store) is briefly unavailable, or the server is receiving its most uploads at once (FOODSAFE_UPLOADS_MAX) or holds its most connections (FOODSAFE_MAX_CONNECTIONS).", "Yes, with exponential backoff and jitter; Retry-After gives a first delay."},
	{HTTPVersion, 505, "HTTP version not supported", "The request line names an HTTP version other than 1.0 or 1.1 (HTTP/2 is negotiated, not named there); answered before routing (instance is the path as sent).", "No: use HTTP/1.1."},
}

// KindOfStatus returns the row of an HTTP status, for answers made before
// any handler ran; a status without a row of its own is invalid-request
// (4xx) or internal-error (5xx).
func KindOfStatus(status int) Kind {
	for _, k := range Kinds {
		if k.Status == status {
			return k
		}
	}
	if status < 500 {
		return KindOf(Invalid)
	}
	return KindOf(Internal)
}

// KindOf returns the row of code; unknown codes are internal errors.
func KindOf(code Code) Kind {
	for _, k := range Kinds {
		if k.Code == code {
			return k
		}
	}
	return KindOf(Internal)
}

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

// Is reports whether err is an *Error of the given code.
func Is(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// As returns err as an *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Failed says whether err is the service's failure (an error that is not
// an *Error, or one whose kind is a 5xx) rather than a refusal of the
// request (a 4xx): after such a failure the outcome of what failed may be
// unknown, and a batch stops there.
func Failed(err error) bool {
	e, ok := As(err)
	return err != nil && (!ok || KindOf(e.Code).Status >= 500)
}

// WithCause returns a copy of e carrying cause for the logs.
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.Cause = cause
	return &c
}
