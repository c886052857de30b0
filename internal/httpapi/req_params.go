package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// queryOnce reads a query parameter that may appear at most once; a
// repeated parameter is ambiguous and refused rather than guessed, and
// one that is not UTF-8 is refused too.
func queryOnce(c *gin.Context, name string) (string, bool, error) {
	vs, ok := c.GetQueryArray(name)
	if !ok {
		return "", false, nil
	}
	if len(vs) > 1 {
		return "", true, apperr.Param(name, "must be given at most once")
	}
	if !utf8.ValidString(vs[0]) {
		// %ff%fe decodes to bytes that are no text: refused here rather
		// than compared (and mismatched) with stored text further on.
		return "", true, apperr.Param(name, "must be UTF-8 text once percent-decoded")
	}
	return vs[0], true, nil
}

// millisParam reads a required epoch-milliseconds parameter.
func millisParam(ps params, name string) (int64, error) {
	v, ok, err := ps.query(name)
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

// restDefaultLimit is the REST page size when the client gives none.
const restDefaultLimit = wire.DefaultLimit

// limitParam reads `limit`: plain digits within the page-size bounds,
// the face's default when absent.
func limitParam(r request) (int, error) {
	v, ok, err := r.params.query("limit")
	if err != nil || !ok {
		return r.defaultLimit, err
	}
	return parseLimit(v)
}

// parseLimit reads a page size written in plain digits (no sign, no
// leading zero, no spaces) within [wire.MinLimit, wire.MaxLimit].
func parseLimit(v string) (int, error) { return parseLimitUpTo(v, wire.MaxLimit) }

// parseLimitUpTo is parseLimit with another largest page size.
func parseLimitUpTo(v string, most int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < wire.MinLimit || n > most || strconv.Itoa(n) != v {
		return 0, apperr.Param("limit", "must be an integer from %d to %d written in digits", wire.MinLimit, most)
	}
	return n, nil
}

// readJSON reads a JSON request body: Content-Type application/json
// (charset utf-8 tolerated), at most the configured size.
func (a *API) readJSON(c *gin.Context) ([]byte, error) {
	if err := jsonContentType(c); err != nil {
		return nil, err
	}
	return a.readBody(c)
}

// readBody reads a request body of at most FOODSAFE_MAX_BODY_BYTES: one
// allocation of the declared length when there is one (none at all when
// it is over the limit: 413 at once), or a growing buffer for a chunked
// body, cut at the limit.
func (a *API) readBody(c *gin.Context) ([]byte, error) {
	return readBodyUpTo(c, a.cfg.MaxBodyBytes)
}

// readBodyUpTo is readBody with another limit (a batch's).
func readBodyUpTo(c *gin.Context, limit int64) ([]byte, error) {
	tooLarge := apperr.New(apperr.PayloadTooLarge, "The body exceeds the limit of %d bytes.", limit)
	n := c.Request.ContentLength
	if n > limit {
		return nil, tooLarge
	}
	r := http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	var body []byte
	var err error
	if n > 0 {
		body = make([]byte, n)
		_, err = io.ReadFull(r, body)
	} else {
		body, err = io.ReadAll(r)
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, tooLarge
	}
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "The body could not be read.").WithCause(err)
	}
	return body, nil
}

// jsonContentType refuses a body that is not declared as UTF-8 JSON.
func jsonContentType(c *gin.Context) error {
	mt, params, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/json" {
		return apperr.New(apperr.Invalid, "Content-Type must be application/json.")
	}
	if cs, ok := params["charset"]; ok && cs != "utf-8" && cs != "UTF-8" {
		return apperr.New(apperr.Invalid, "The body must be UTF-8 encoded JSON.")
	}
	return nil
}

// parseBody decodes a JSON body already read (validate.Decode) and
// validates it against the named schema. A body that cannot be decoded is
// a terminal error; schema violations are returned for the caller to
// extend.
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

// notAhead refuses a device timestamp more than the tolerated clock skew
// (FOODSAFE_MAX_CLOCK_SKEW) ahead of the server's clock: a record cannot
// be received before it was captured.
func (a *API) notAhead(now, at int64, pointer string) []apperr.FieldError {
	if at > now+a.cfg.MaxClockSkew.Milliseconds() {
		return []apperr.FieldError{{Pointer: pointer, Detail: fmt.Sprintf(
			"is in the future: more than %s ahead of the server's clock; check the device's clock", a.cfg.MaxClockSkew)}}
	}
	return nil
}

// restParams reads a REST request's path and query string.
type restParams struct{ c *gin.Context }

func (p restParams) path(name string) string { return p.c.Param(name) }

func (p restParams) query(name string) (string, bool, error) { return queryOnce(p.c, name) }

// restRequest is the request of an operation served over REST.
func (a *API) restRequest(c *gin.Context) request {
	return request{principal: principal(c), params: restParams{c}, baseURL: a.baseURL(c), defaultLimit: restDefaultLimit}
}
