package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
)

// jsonWriter is a result that may be too large to hold as one answer (a
// key's restaurants), which writes its JSON to the response in pieces
// made in buf, and returns the buffer it used.
type jsonWriter interface {
	WriteJSON(w io.Writer, buf []byte) ([]byte, error)
}

// writeStreamed answers what jw writes, as PureJSON would (same type,
// same bytes), in pieces made in a kept buffer: a short answer is one
// write (with a Content-Length), a long one goes out chunked as it is
// made. A failure to write is the client's connection going away: there
// is no one to tell.
func writeStreamed(c *gin.Context, jw jsonWriter) {
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	bp := bodyBuffers.Get().(*[]byte)
	b, _ := jw.WriteJSON(c.Writer, *bp)
	if cap(b) <= maxPooledBody {
		*bp = b[:0]
	}
	bodyBuffers.Put(bp)
}

// jsonAppender is a result that writes its own JSON (wire.WalkPage and
// wire.Envelope: records, whose data is already JSON; a page of
// deliveries; see wire/append.go).
type jsonAppender interface {
	AppendJSON([]byte) ([]byte, error)
}

// bodyBuffers keeps answer buffers between requests: a walk page of 100
// records is tens of kilobytes.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBody is the largest buffer kept for the next answer.
const maxPooledBody = 1 << 20

// writeAppended writes what ap appends, as PureJSON would (same type, same
// trailing newline). false, with nothing written, when ap refuses (a
// string that is not UTF-8): encoding/json then writes it its own way.
func writeAppended(c *gin.Context, ap jsonAppender) bool {
	bp := bodyBuffers.Get().(*[]byte)
	b, err := ap.AppendJSON((*bp)[:0])
	if err != nil {
		// A refusal returns no buffer: the one taken is kept as it was.
		bodyBuffers.Put(bp)
		return false
	}
	defer func() {
		if cap(b) <= maxPooledBody { // a page of huge records is not kept
			*bp = b[:0]
			bodyBuffers.Put(bp)
		}
	}()
	c.Data(http.StatusOK, "application/json; charset=utf-8", append(b, '\n'))
	return true
}

// writePureJSON writes v as c.PureJSON does (encoding/json, no HTML
// escaping, a trailing newline), encoded first into a kept buffer: the
// answer goes out in one write with a Content-Length, where PureJSON
// streams it in 4 KiB pieces with chunked encoding. When v does not
// encode, PureJSON fails as it always did.
func writePureJSON(c *gin.Context, v any) {
	bp := bodyBuffers.Get().(*[]byte)
	buf := bytes.NewBuffer((*bp)[:0])
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	if err == nil {
		c.Data(http.StatusOK, "application/json; charset=utf-8", buf.Bytes())
	}
	if b := buf.Bytes(); cap(b) <= maxPooledBody {
		*bp = b[:0]
		bodyBuffers.Put(bp)
	}
	if err != nil {
		c.PureJSON(http.StatusOK, v)
	}
}
