package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/server"
)

// refuseAmbiguousFraming answers 400 to a request carrying both
// Content-Length and Transfer-Encoding (RFC 9112 6.3: a possible
// smuggling attempt, to be handled as an error), and the connection
// closes after the answer (its body is unread: closeUnread).
func (a *API) refuseAmbiguousFraming(c *gin.Context) {
	if server.AmbiguousFraming(c.Request) {
		a.fail(c, apperr.New(apperr.Invalid,
			"The request carries both Content-Length and Transfer-Encoding; send exactly one of them (RFC 9112 6.3)."))
		return
	}
	c.Next()
}
