package tests

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	fsapp "github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// BenchmarkMetricsOverhead is what the instrumentation costs one request:
// the whole engine in process (no network, logs discarded, so nothing
// else hides the difference), with metrics on and off, for a health probe
// (no database) and an authenticated single-record read (key lookup,
// record, audit event). The difference between on and off is the absolute
// cost per request; docs/performance.md compares it with the CPU a request costs under
// `make load`.
func BenchmarkMetricsOverhead(b *testing.B) {
	url := testdb.URL(b)
	for _, mode := range []string{"off", "on"} {
		cfg := testConfig(url)
		cfg.BlobDir = b.TempDir()
		if mode == "off" {
			cfg.MetricsAddr = ""
		}
		svc, err := fsapp.New(context.Background(), cfg, slog.New(slog.DiscardHandler), fsapp.Options{})
		require.NoError(b, err)
		b.Cleanup(func() { _ = svc.Close(context.Background()) })
		a := &app{t: b, cfg: cfg, svc: svc}
		a.srv = httptest.NewServer(svc.Engine)
		b.Cleanup(a.srv.Close)
		a.addRestaurants("r1")
		key := a.newKey(grant("r1", "areas:write", "areas:read"))
		a.put(key, "r1", "areas", "a1", "m1", area("Kitchen"))

		run := func(path string, header http.Header) func(b *testing.B) {
			return func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					rec := httptest.NewRecorder()
					req := httptest.NewRequest(http.MethodGet, path, nil)
					req.Header = header
					svc.Engine.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
					}
				}
			}
		}
		b.Run("health/"+mode, run("/health/live", http.Header{}))
		b.Run("record/"+mode, run(recordsPath("r1", "areas")+"/a1", http.Header{"Authorization": {"Bearer " + key}}))
		// Let the audit writer catch up before the next mode starts.
		require.NoError(b, svc.Audit.Close(context.Background()))
	}
}
