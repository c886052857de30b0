package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// queryOnce reads a query parameter that may appear at most once; a
// repeated parameter is ambiguous and refused rather than guessed.
func queryOnce(c *gin.Context, name string) (string, bool, error) {
	vs, ok := c.GetQueryArray(name)
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", true, apperr.Param(name, "must be given at most once")
	}
	return vs[0], true, nil
}

// millisParam reads a required epoch-milliseconds parameter.
func millisParam(c *gin.Context, name string) (int64, error) {
	v, ok, err := queryOnce(c, name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, apperr.Param(name, "is required (epoch milliseconds as a string of digits)")
	}
	ms, err := wire.ParseMillis(v)
	if err != nil {
		return 0, apperr.Param(name, "%s", err.Error())
	}
	return int64(ms), nil
}

// limitParam reads `limit`: plain digits within the page-size bounds,
// the default when absent.
func limitParam(c *gin.Context) (int, error) {
	v, ok, err := queryOnce(c, "limit")
	if err != nil || !ok {
		return wire.DefaultLimit, err
	}
	return parseLimit(v)
}

// parseLimit reads a page size written in plain digits (no sign, no
// leading zero, no spaces) within [wire.MinLimit, wire.MaxLimit].
func parseLimit(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < wire.MinLimit || n > wire.MaxLimit || strconv.Itoa(n) != v {
		return 0, apperr.Param("limit", "must be an integer from %d to %d written in digits", wire.MinLimit, wire.MaxLimit)
	}
	return n, nil
}

// cursorParam reads `cursor` into pos when present, mapping cursor failures
// to 400s that tell the client what to do.
func (a *API) cursorParam(c *gin.Context, kind string, bind []string, pos any) (bool, error) {
	v, ok, err := queryOnce(c, "cursor")
	if err != nil || !ok {
		return false, err
	}
	err = a.cursors.Open(v, kind, bind, pos)
	switch walk := cursorWalks[kind]; {
	case err == nil:
		return true, nil
	case errors.Is(err, cursor.ErrMismatch):
		a.metrics.CursorRefused(walk, metrics.CursorMismatch)
		return false, apperr.Param("cursor", "was issued for other parameters; keep the restaurant, %s and limit identical for a whole walk, or start a new walk without a cursor", cursorBindingWords[kind])
	case errors.Is(err, cursor.ErrExpired):
		a.metrics.CursorRefused(walk, metrics.CursorExpired)
		return false, apperr.Param("cursor", "has expired; start a new walk without a cursor")
	default:
		a.metrics.CursorRefused(walk, metrics.CursorMalformed)
		return false, apperr.Param("cursor", "is not a cursor issued by this service (garbage, truncated or altered); pass nextCursor unchanged, or start a new walk without a cursor")
	}
}

var cursorBindingWords = map[string]string{
	cursorDeliveries: "from, to",
	cursorRecords:    "collection",
}

// cursorWalks labels the walk metrics of each cursor kind.
var cursorWalks = map[string]metrics.Walk{
	cursorDeliveries: metrics.WalkDeliveries,
	cursorRecords:    metrics.WalkRecords,
}

// Cursor kinds keep a delivery cursor from opening a walk and vice versa.
const (
	cursorDeliveries = "deliveries"
	cursorRecords    = "records"
)

// readJSON reads a JSON request body: Content-Type application/json
// (charset utf-8 tolerated), at most the configured size.
func (a *API) readJSON(c *gin.Context) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, apperr.New(apperr.Invalid, "Content-Type must be application/json.")
	}
	if cs, ok := params["charset"]; ok && cs != "utf-8" && cs != "UTF-8" {
		return nil, apperr.New(apperr.Invalid, "The body must be UTF-8 encoded JSON.")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, a.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, apperr.New(apperr.PayloadTooLarge, "The body exceeds the limit of %d bytes.", a.cfg.MaxBodyBytes)
	}
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "The body could not be read.").WithCause(err)
	}
	return body, nil
}

// decodeBody reads a JSON body, decodes it (validate.Decode) and validates it
// against the named schema. A body that cannot be read or decoded is a
// terminal error; schema violations are returned for the caller to extend
// (path echoes) before answering.
func (a *API) decodeBody(c *gin.Context, schemaName string) (map[string]any, []apperr.FieldError, error) {
	body, err := a.readJSON(c)
	if err != nil {
		return nil, nil, err
	}
	return a.parseBody(body, schemaName)
}

// parseBody is decodeBody for a body already read.
func (a *API) parseBody(body []byte, schemaName string) (map[string]any, []apperr.FieldError, error) {
	doc, err := validate.Decode(body)
	if err != nil {
		return nil, nil, err
	}
	return doc, a.schemas.Validate(schemaName, doc, ""), nil
}

// invalidID is the 400 for an ill-formed id in the path of a write.
func invalidID(param string) error {
	return apperr.Param(param, "must be 1-200 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
}

// timestampMember reads a timestamp member of a body the schema has
// checked for the digit pattern. The schema cannot see that 19 digits may
// exceed what the database holds, so that one violation is reported here,
// the same way for every body.
func timestampMember(doc map[string]any, member string) (int64, bool, []apperr.FieldError) {
	s, ok := doc[member].(string)
	if !ok {
		return 0, false, nil
	}
	ms, err := wire.ParseMillis(s)
	switch {
	case err == nil:
		return int64(ms), true, nil
	case errors.Is(err, wire.ErrMillisOverflow):
		return 0, false, []apperr.FieldError{{Pointer: "/" + member, Detail: err.Error()}}
	}
	return 0, false, nil // the schema reports the pattern violation
}
