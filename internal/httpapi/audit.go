package httpapi

import (
	"net/netip"
	"strings"

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
		RestaurantID: truncate(c.Param("restaurantId"), 200),
		KeyPublicID:  c.GetString(ctxLogKeyID),
		Outcome:      c.GetString(ctxAuditOutcome),
	}
	if ip, err := netip.ParseAddr(c.ClientIP()); err == nil {
		e.ClientIP = ip
	}
	a.audit.Record(e)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
