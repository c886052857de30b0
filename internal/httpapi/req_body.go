package httpapi

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
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

// trackedBody notes whether its reader got to the end of the body.
type trackedBody struct {
	io.ReadCloser
	length, read int64
	ended        bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if errors.Is(err, io.EOF) || (b.length >= 0 && b.read >= b.length) {
		b.ended = true
	}
	return n, err
}

// bodyKey holds the request's body as it arrived, when it has one.
var bodyKey = stateKey[*trackedBody]{"body"}

// trackBody wraps a request's body (when it has one) so a refusal can
// tell whether it was read.
func trackBody(c *gin.Context) {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	b := &trackedBody{ReadCloser: r.Body, length: r.ContentLength}
	r.Body = b
	bodyKey.set(c, b)
}

// closeUnread makes the answer to a request whose body was not read to
// its end close the connection, lingerUnread after it is written.
func closeUnread(c *gin.Context) {
	if b, ok := bodyKey.get(c); !ok || b.ended {
		return
	}
	c.Header("Connection", "close")
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(lingerUnread))
}

// lingerUnread is how long a refused request's remaining body may keep
// arriving after the answer, before the connection closes: net/http's
// own delay before it closes a connection a client is still writing to.
const lingerUnread = 500 * time.Millisecond
