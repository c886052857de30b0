package httpapi

import (
	"bufio"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/klauspost/compress/gzhttp"
	"github.com/klauspost/compress/gzip"
)

// Responses are compressed for clients that accept it (Accept-Encoding:
// zstd, preferred at equal weight, or gzip), by github.com/klauspost/
// compress/gzhttp. It is the one layer allowed to change a handler's
// bytes, and says so: Content-Encoding names the coding, Vary:
// Accept-Encoding is on every answer of a compressed route (caches keep
// one copy per coding), and a compressed answer has no Content-Length
// (it is sent chunked), so none is ever wrong. Never compressed: file
// downloads (routes marked Raw: their bytes are the stored file, ranges
// included), content that is not text (compressedTypes), and answers
// under compressMinSize.

// compressMinSize is the smallest answer compressed: one that fits a TCP
// segment (1,460 bytes of payload on a 1,500-byte MTU, less the
// headers) takes the same packet compressed or not, and a single record
// or a problem document stays as cheap as it was.
const compressMinSize = 1400

// compressedTypes are the media types compressed: the service's JSON and
// problem documents, the docs page's text. Anything else (a file's type,
// an image) passes as it is.
func compressedTypes(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || mt == "application/problem+json" || strings.HasPrefix(mt, "text/") ||
		mt == "application/javascript"
}

// newCompressor is the compressing middleware: gzip at its fastest level
// (an API answer is made once and read once; at level 1 a page of 100
// records shrinks about as much as at level 6, for a fraction of the
// CPU), and zstd at its fastest, with its default 128 KiB window.
func newCompressor() (gin.HandlerFunc, error) {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(compressMinSize), gzhttp.CompressionLevel(gzip.BestSpeed),
		gzhttp.ContentTypeFilter(compressedTypes),
		// A compressed answer is other bytes than the plain one: a strong
		// entity tag says which coding it names (GET /v1/restaurants).
		gzhttp.SuffixETag("-gzip"))
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		if len(c.Request.Header.Values("Accept-Encoding")) == 0 {
			// Nothing to negotiate: the answer goes out as it is, and says
			// it would have been otherwise (Vary), without the wrapper's
			// cost on every small read.
			c.Writer.Header().Add("Vary", "Accept-Encoding")
			c.Next()
			return
		}
		plain := c.Writer
		defer func() { c.Writer = plain }()
		wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cw := &compressingWriter{ResponseWriter: plain, out: w, size: -1}
			c.Writer = cw
			c.Next()
			// A status without a body (a 202, a 304) goes out now, as gin
			// sends it at the end of a request, which is too late here.
			cw.WriteHeaderNow()
		})).ServeHTTP(plain, c.Request)
	}, nil
}

// compressingWriter is gin's writer for the handlers of a compressed
// route: what they write goes through the compressor (out), and it
// answers gin's questions (status, size, written) about what they wrote,
// before compression. The middleware outside it see gin's own writer
// again, which counts the bytes sent.
type compressingWriter struct {
	gin.ResponseWriter
	out    http.ResponseWriter
	status int
	size   int
	sent   bool
}

func (w *compressingWriter) Header() http.Header { return w.out.Header() }

// WriteHeader keeps the status until the first byte, as gin's writer
// does (the last status set before then wins).
func (w *compressingWriter) WriteHeader(code int) {
	if code > 0 && !w.sent {
		w.status = code
	}
}

func (w *compressingWriter) WriteHeaderNow() {
	if !w.sent {
		w.sent = true
		w.size = 0
		w.out.WriteHeader(w.Status())
	}
}

func (w *compressingWriter) Write(b []byte) (int, error) {
	w.WriteHeaderNow()
	n, err := w.out.Write(b)
	w.size += n
	return n, err
}

func (w *compressingWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *compressingWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *compressingWriter) Size() int { return w.size }

func (w *compressingWriter) Written() bool { return w.sent }

// Flush sends what the compressor holds.
func (w *compressingWriter) Flush() {
	w.WriteHeaderNow()
	if f, ok := w.out.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *compressingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.ResponseWriter.Hijack()
}

// Unwrap lets http.ResponseController reach the connection through the
// compressor.
func (w *compressingWriter) Unwrap() http.ResponseWriter { return w.out }
