// Package app assembles the service from a Config: metrics, pool, rate
// limiter, audit writer and HTTP engine, and takes them down in the right
// order. The
// serve command and the tests build the service through it, so tests run
// exactly what production runs.
package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/maintain"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
	"github.com/foodsafe/foodsafe/internal/redact"
	"github.com/foodsafe/foodsafe/internal/server"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/telemetry"
	"github.com/foodsafe/foodsafe/internal/telemetry/stores"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// App is a running service instance.
type App struct {
	Config config.Config
	Store  *store.Store
	Engine *gin.Engine
	// Handler is what Serve answers with: Engine, inside the server span
	// of each request when tracing is on (Tracing).
	Handler http.Handler
	// Tracing exports traces when the OTEL_* variables ask for it; nil
	// when they do not.
	Tracing *telemetry.Tracing
	Audit   *audit.Writer
	Limiter *ratelimit.Limiter
	// Blobs is the file store (FOODSAFE_BLOB_URL or FOODSAFE_BLOB_DIR).
	Blobs blob.Store
	// Metrics is this instance's own registry; nil when metrics are off
	// (FOODSAFE_METRICS_ADDR="").
	Metrics *metrics.Metrics
	// Maintenance runs the storage jobs (compaction, audit partitions);
	// Serve runs it every FOODSAFE_MAINTENANCE_INTERVAL.
	Maintenance *maintain.Runner
	log         *slog.Logger
	// stopKeys stops the key cache's listener.
	stopKeys func()
}

// Options carry what only tests change.
type Options struct {
	// Now replaces the clock.
	Now func() time.Time
}

// New builds the service. Nothing here needs the database to be up; an
// object store (FOODSAFE_BLOB_URL) must answer. On any error, everything
// opened so far is closed again.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, o Options) (_ *App, err error) {
	// Whatever a client pastes where (a key in a path, a header, a body
	// field), no log line of the service carries a secret.
	log = slog.New(redact.Handler(log.Handler()))
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	var m *metrics.Metrics
	if cfg.MetricsAddr != "" {
		m = metrics.New()
	}
	tr, err := telemetry.Setup(ctx, "foodsafe", log)
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = tr.Shutdown(context.WithoutCancel(ctx)) })
	st, err := store.Open(ctx, cfg.DatabaseURL, stores.PGX(tr))
	if err != nil {
		return nil, err
	}
	undo = append(undo, st.Close)
	m.WatchPool(st.Pool().Stat)
	stopKeys := func() {}
	if cfg.KeyCache {
		stopKeys = st.StartKeyCache(log)
		undo = append(undo, stopKeys)
	}
	m.WatchKeyCache(st.KeyCacheStats)
	lim, err := ratelimit.New(cfg.RateLimit, cfg.RedisURL, cfg.RedisPrefix, log, m, stores.Redis(tr))
	if err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = lim.Close() })
	m.WatchRateLimiter(lim.Backend)
	schemas, err := validate.Load()
	if err != nil {
		return nil, err
	}
	cursorKey, err := secretKey(cfg.CursorKey, "FOODSAFE_CURSOR_KEY", "cursors", log)
	if err != nil {
		return nil, err
	}
	blobs, err := openBlobs(ctx, cfg, log, tr)
	if err != nil {
		return nil, err
	}
	aw := audit.NewWriter(st.AuditInsert, log, audit.Options{
		FlushInterval: cfg.AuditFlushInterval, BatchSize: cfg.AuditBatchSize, BufferSize: cfg.AuditBufferSize,
		Metrics: m, Counts: st.AuditCountsAdd, MaxRows: cfg.AuditCountRows,
	})
	undo = append(undo, func() { _ = aw.Close(context.WithoutCancel(ctx)) })
	m.WatchAuditBuffer(aw.Buffered)
	e, err := httpapi.New(httpapi.Deps{Config: cfg, Store: st, Log: log, Audit: aw, Limiter: lim,
		Schemas: schemas, Cursors: cursor.New(cursorKey, o.Now), Blobs: blobs, Metrics: m, Traced: tr.On(), Now: o.Now})
	if err != nil {
		return nil, err
	}
	jobs := maintain.New(st, blobs, log, m, MaintenanceSettings(cfg), cfg.MaintenanceInterval, o.Now)
	return &App{Config: cfg, Store: st, Engine: e, Handler: tr.HTTPHandler(e), Tracing: tr, Audit: aw, Limiter: lim, Blobs: blobs, Metrics: m, Maintenance: jobs, log: log, stopKeys: stopKeys}, nil
}

// MaintenanceSettings are the maintenance jobs' settings in cfg.
func MaintenanceSettings(cfg config.Config) maintain.Settings {
	return maintain.Settings{CompactAfter: time.Duration(cfg.CompactAfter), AuditRetention: time.Duration(cfg.AuditRetention),
		BlobGrace: time.Duration(cfg.BlobGrace)}
}

// openBlobs opens the configured file store; only the filesystem store
// signs its own URLs and needs FOODSAFE_URL_KEY.
func openBlobs(ctx context.Context, cfg config.Config, log *slog.Logger, tr *telemetry.Tracing) (blob.Store, error) {
	var signer *blob.Signer
	if cfg.BlobURL == "" {
		urlKey, err := secretKey(cfg.URLKey, "FOODSAFE_URL_KEY", "download URLs", log)
		if err != nil {
			return nil, err
		}
		signer = blob.NewSigner(urlKey)
	}
	set := blob.Settings{URL: cfg.BlobURL, Dir: cfg.BlobDir, Signer: signer}
	if tr.On() {
		set.Transport = func(rt http.RoundTripper) http.RoundTripper { return tr.HTTPTransport(rt, stores.S3SpanName) }
	}
	blobs, err := blob.Open(ctx, set)
	if err != nil && cfg.BlobURL != "" {
		return nil, fmt.Errorf("FOODSAFE_BLOB_URL: %w", err)
	}
	return blobs, err
}

// minKeyLen is the shortest accepted signing key.
const minKeyLen = 32

// secretKey returns the configured signing key, or a random one with a
// warning: fine for a single dev process, wrong for several servers (they
// would reject each other's signatures) and lost at restart.
func secretKey(configured, envName, what string, log *slog.Logger) ([]byte, error) {
	if configured != "" {
		if len(configured) < minKeyLen {
			return nil, fmt.Errorf("%s must be at least %d characters", envName, minKeyLen)
		}
		return []byte(configured), nil
	}
	k := make([]byte, minKeyLen)
	_, _ = rand.Read(k)
	log.Warn(envName+" is not set; generated a random key for this process. "+
		"Set it (the same value on every server) in production, or "+what+" break across processes and restarts", "variable", envName)
	return k, nil
}

// Close flushes the audit trail and releases connections. Call it after
// the HTTP server has drained, so no handler can still record events.
func (a *App) Close(ctx context.Context) error {
	err := a.Audit.Close(ctx)
	if err != nil {
		a.log.Error("audit flush on shutdown incomplete", "error", err)
	}
	err = errors.Join(err, a.Limiter.Close())
	a.stopKeys()
	a.Store.Close()
	// Last: the spans of the requests drained above are exported.
	return errors.Join(err, a.Tracing.Shutdown(ctx))
}

// Serve answers the API on ln and, when metricsLn is not nil, the operator
// endpoints (OpsHandler) on metricsLn, until ctx ends; then it drains both
// and closes the app.
func (a *App) Serve(ctx context.Context, ln, metricsLn net.Listener) error {
	c := a.Config
	// The operator listener stops with the API, whatever stops the API.
	opsCtx, stopOps := context.WithCancel(ctx)
	defer stopOps()
	var wg sync.WaitGroup
	var opsErr error
	if metricsLn != nil {
		wg.Go(func() {
			opsErr = server.Serve(opsCtx, metricsLn, a.OpsHandler(), server.Options{
				ReadHeaderTimeout: c.ReadHeaderTimeout,
				ReadTimeout:       c.ReadTimeout,
				// A CPU profile or execution trace streams for as many
				// seconds as asked (pprof refuses more than this).
				WriteTimeout:    opsWriteTimeout,
				IdleTimeout:     c.IdleTimeout,
				ShutdownTimeout: c.ShutdownTimeout,
			}, a.log.With("listener", "metrics"))
			if opsErr != nil {
				// The API keeps serving: losing the metrics is not a
				// reason to refuse partners.
				a.log.Error("metrics listener failed", "error", opsErr)
			}
		})
	}
	if c.MaintenanceInterval > 0 {
		// Stops with the API; a run cut short resumes next time.
		wg.Go(func() { a.Maintenance.Loop(opsCtx, c.MaintenanceInterval) })
	}
	err := server.Serve(ctx, ln, a.Handler, server.Options{
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		ShutdownTimeout:   c.ShutdownTimeout,
		Canned:            httpapi.CannedProblems(c.BaseURL, a.log),
		MaxConns:          c.MaxConnections,
		ClientConns:       clientConnections(c),
		Client:            connectionClient(c),
	}, a.log)
	stopOps()
	wg.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, opsErr, a.Close(cctx))
}

// clientConnections is the connections one client may hold open:
// FOODSAFE_CLIENT_CONNECTION_SHARE percent of FOODSAFE_MAX_CONNECTIONS, at
// least one; 0 (no share) without a cap or at 100 percent.
func clientConnections(c config.Config) int {
	if c.MaxConnections == 0 || c.ClientConnectionShare >= 100 {
		return 0
	}
	return max(1, c.MaxConnections*c.ClientConnectionShare/100)
}

// connectionClient is the client a connection's peer is one of, for its
// share of the connections: its prefix, or none for a trusted proxy (its
// connections carry many clients, and the address forwarded is only
// known once a request is read).
func connectionClient(c config.Config) func(netip.Addr) (netip.Prefix, bool) {
	prefixes := c.ClientPrefixes()
	return func(a netip.Addr) (netip.Prefix, bool) {
		a = a.Unmap()
		for _, p := range c.TrustedProxies {
			if p.Contains(a) {
				return netip.Prefix{}, false
			}
		}
		return prefixes.Of(a), true
	}
}

// opsWriteTimeout bounds one answer of the operator listener.
const opsWriteTimeout = 5 * time.Minute

// OpsHandler serves what operators read and partners never reach:
// /metrics (this instance's registry) and net/http/pprof under
// /debug/pprof/. It is mounted on its own listener, never on the API
// port, so it is neither rate limited nor audited. Without metrics it
// answers 404 on /metrics and still serves pprof.
func (a *App) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	if a.Metrics != nil {
		mux.Handle("GET /metrics", a.Metrics.Handler(a.log))
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
