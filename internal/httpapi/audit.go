package httpapi

import (
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/audit"
)

// auditTrail records every request except successful health probes (spec
// 4.1), after the response status is known. It runs outside the recoverer
// so panics are recorded as the 500s they became.
func (a *API) auditTrail(c *gin.Context) {
	c.Next()
	route := routeOf(c)
	status := c.Writer.Status()
	if strings.HasPrefix(route, "/health/") && status < 400 {
		return
	}
	e := audit.Event{
		At:           a.now(),
		Method:       c.Request.Method,
		Route:        route,
		Status:       status,
		RequestID:    requestID(c),
		RestaurantID: storableText(c.Param("restaurantId"), 200),
		KeyPublicID:  c.GetString(ctxLogKeyID),
		Outcome:      c.GetString(ctxAuditOutcome),
	}
	if ip, err := netip.ParseAddr(c.ClientIP()); err == nil {
		e.ClientIP = ip
	}
	a.audit.Record(e)
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
