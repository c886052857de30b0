package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/server"
)

// A refusal must not wait for a body nobody will read. Left alone,
// net/http reads up to 256 KiB of an unread body before it writes the
// answer, and reads it again when the handler returns, so a client
// refused in middleware (401, 429) that trickles its body gets its answer
// and its connection back only at the read timeout. Refusals of a request
// whose body is not read to its end therefore close the connection
// (Connection: close, which skips the first read) and give what is left
// of the body lingerUnread to arrive (the second read), so a client still
// sending is not reset before it has read the answer.

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
