package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// restaurantsListREST is GET /v1/restaurants over REST: the list with its
// entity tag (auth.Principal.GrantsTag), or 304 Not Modified without a
// body when If-None-Match names it, so a client that keeps the list
// refreshes it for a few hundred bytes whatever the key reaches. The tag
// is strong: the list's bytes follow from the grants alone. A compressed
// answer carries it with its coding's suffix (-gzip, -zstd; see
// newCompressor), which a later If-None-Match may quote either way.
func (a *API) restaurantsListREST() handler {
	serve := a.serve(op(a.restaurantsList))
	return func(c *gin.Context) error {
		tag := `"` + principal(c).GrantsTag() + `"`
		if sent, ok := noneMatch(c.Request.Header.Values("If-None-Match"), tag); ok {
			c.Header("ETag", sent)
			c.Status(http.StatusNotModified)
			return nil
		}
		c.Header("ETag", tag)
		return serve(c)
	}
}

// noneMatch reports whether an If-None-Match field names tag (RFC 9110
// 13.1.2: weak comparison, "*" matches any current representation), and
// the entity tag as the client sent it, which the 304 repeats: a coding's
// suffix added by the compressor is the same list, compressed.
func noneMatch(fields []string, tag string) (string, bool) {
	for _, f := range fields {
		for _, t := range strings.Split(f, ",") {
			t = strings.TrimSpace(t)
			if t == "*" {
				return tag, true
			}
			bare := strings.TrimPrefix(t, "W/")
			for _, coding := range []string{"-gzip", "-zstd"} {
				if len(bare) > len(coding)+1 && strings.HasSuffix(bare, coding+`"`) {
					bare = bare[:len(bare)-len(coding)-1] + `"`
					break
				}
			}
			if bare == tag {
				return t, true
			}
		}
	}
	return "", false
}
