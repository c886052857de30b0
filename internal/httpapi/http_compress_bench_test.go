package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// BenchmarkCompressor measures what the compressing middleware adds to
// one answer, in CPU and allocations, against the same gin handler
// without it: the figure make bench-http cannot separate from its noise
// on a shared machine (docs/performance.md, "Compression"). An answer
// under compressMinSize is the small read that must not pay for
// compression; a page above it is what a client that accepts gzip or zstd
// asks to be compressed.
func BenchmarkCompressor(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	small := bytes.Repeat([]byte(`{"a":1},`), 200)[:compressMinSize-200]
	// A page of 100 walk-like records whose ids, positions and readings
	// differ, as a real page's do (a repeated record would compress far
	// better than any real page).
	var page []byte
	for i := range 100 {
		page = fmt.Appendf(page, `{"restaurantId":"demo-bistro","collection":"temperature-records","id":"tr-%08x",`+
			`"sequence":"%d","mutationId":"m-%016x","deleted":false,"capturedAt":"%d","receivedAt":"%d",`+
			`"data":{"equipmentId":"eq-%04d","temperature":%d.%d,"shift":"MORNING","capturedBy":"u-%03d"}},`,
			i*7919, 1000+i, uint64(i)*0x9e3779b97f4a7c15, 1_800_000_000_000+int64(i)*61_013, 1_800_000_000_500+int64(i)*61_013,
			i%37, (i*13)%9, (i*7)%10, i%11)
	}
	compress, err := newCompressor()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		body     []byte
		encoding string
		wrapped  bool
	}{
		{"small/without-middleware", small, "", false},
		{"small/no-accept-encoding", small, "", true},
		{"small/gzip-accepted", small, "gzip", true},
		{"page/without-middleware", page, "", false},
		{"page/no-accept-encoding", page, "", true},
		{"page/gzip", page, "gzip", true},
		{"page/zstd", page, "zstd", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := gin.New()
			if c.wrapped {
				r.Use(compress)
			}
			r.GET("/", func(g *gin.Context) { g.Data(http.StatusOK, "application/json", c.body) })
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if c.encoding != "" {
				req.Header.Set("Accept-Encoding", c.encoding)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				w := httptest.NewRecorder()
				r.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
				if got := w.Header().Get("Content-Encoding"); (got != "") != (c.encoding != "" && len(c.body) >= compressMinSize) {
					b.Fatalf("Content-Encoding %q for %d bytes accepting %q", got, len(c.body), c.encoding)
				}
			}
		})
	}
}
