// Package httpapi is the HTTP face of the service. Its files are named by
// layer, top to bottom, and each names only declarations of its own layer
// and the layers below (TestLayers, layers_test.go); within a layer no two
// files name each other, directly or through others (TestFilesHaveNoCycle):
//
//   - api_: the wiring, New and the route table (api_routes.go);
//   - http_: the REST and MCP faces and the middleware (auth, rate limits,
//     request ids and logs, framing, compression, canned answers);
//   - op_: one file per resource, the operations both faces serve;
//   - resp_: answers, problem documents (resp_problem.go), prose;
//   - req_: parameters, bodies and the request both faces build;
//   - base: the API receiver and the typed request state (base_state.go).
//
// Handlers stay small: parse, validate, call the store, respond. They
// return errors, *apperr.Error for anything a client should hear about,
// and resp_problem.go renders them.
package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/version"
)

// Deps are the collaborators of the HTTP layer.
type Deps struct {
	Config  config.Config
	Store   *store.Store
	Log     *slog.Logger
	Audit   *audit.Writer
	Limiter *ratelimit.Limiter
	Schemas *validate.Set
	Cursors *cursor.Codec
	Blobs   blob.Store
	// Metrics is the instrumentation; nil turns it off.
	Metrics *metrics.Metrics
	// Traced says tracing is on (the OTEL_* variables): requests then name
	// their server span by route and make the service's own child spans.
	Traced bool
	// Now is the clock (injected by tests); time.Now when nil.
	Now func() time.Time
}

// trustedProxies is gin's form of the setting; nil trusts nobody.
func trustedProxies(ps config.Prefixes) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// New builds the gin engine with every route of the route table, and the
// OpenAPI document from the same table; a document that does not validate
// stops the start-up.
func New(d Deps) (*gin.Engine, error) {
	a := &API{cfg: d.Config, store: d.Store, log: d.Log, audit: d.Audit, limiter: d.Limiter,
		schemas: d.Schemas, cursors: cursor.NewIssuer(d.Cursors, d.Config.CursorTTL, d.Metrics), blobs: d.Blobs,
		metrics: d.Metrics, now: d.Now}
	a.files, _ = d.Blobs.(*blob.FS)
	a.uploads = newUploadSlots(d.Config.UploadsPerKey, d.Config.UploadsMax, d.Config.UploadsReserved)
	a.resumes = newResumeRequests()
	a.largeAnswers = newLargeAnswers()
	if a.now == nil {
		a.now = time.Now
	}
	doc, err := Document(d.Schemas, openapi.Info{Version: version.Version, Server: openapi.ServerURL(d.Config.BaseURL)})
	if err != nil {
		return nil, err
	}
	if a.openapiJSON, err = marshalDocument(doc); err != nil {
		return nil, err
	}
	if a.compress, err = newCompressor(); err != nil {
		return nil, err
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// Redirects would answer with HTML bodies and hide client mistakes; an
	// API answers 404/405 problems instead.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// Client IPs come from the socket, unless it is a proxy the operator
	// names (FOODSAFE_TRUSTED_PROXIES): then from its X-Forwarded-For,
	// read from the right, the first address that is not a trusted proxy
	// (what those proxies appended; anything left of it is the client's
	// own say). Trusting forwarded headers is a deployment decision this
	// service does not make for the operator.
	e.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := e.SetTrustedProxies(trustedProxies(d.Config.TrustedProxies)); err != nil {
		return nil, fmt.Errorf("FOODSAFE_TRUSTED_PROXIES: %w", err)
	}

	// Order matters: the instrumentation, the access log and the audit
	// trail wrap the recoverer so they see the 500 a panic becomes.
	if a.metrics != nil {
		e.Use(a.instrument)
	}
	e.Use(a.identifyClient, withRequestID)
	if d.Traced {
		e.Use(a.traceRequest)
	}
	e.Use(a.accessLog, a.auditTrail, a.recoverer, a.refuseAmbiguousFraming)
	e.NoRoute(a.limitOpen, func(c *gin.Context) {
		if c.Request.Method == http.MethodOptions && c.Request.RequestURI == "*" {
			// OPTIONS *, the server's no-op (RFC 9110 9.3.7): answered as
			// net/http would, once budgeted, logged and audited.
			c.Header("Content-Length", "0")
			c.Status(http.StatusOK)
			return
		}
		a.fail(c, apperr.ErrNotFound)
	})
	e.NoMethod(a.limitOpen, func(c *gin.Context) {
		a.fail(c, apperr.New(apperr.MethodNotAllowed,
			"Method %s is not allowed here; see the Allow header.", c.Request.Method))
	})
	routes := a.routes()
	if a.mcpTools, err = buildTools(routes, a.localTools()); err != nil {
		return nil, err
	}
	a.mcpHandler = a.newMCPHandler()
	heads := map[string]bool{}
	for _, r := range routes {
		e.Handle(r.Method, r.Path, a.chain(r)...)
		heads[r.Path] = heads[r.Path] || r.Method == http.MethodHead
	}
	// RFC 9110 9.1: HEAD wherever GET, with the same status and headers
	// (net/http drops the body). Load balancers probe with it.
	for _, r := range routes {
		if r.Method == http.MethodGet && !heads[r.Path] {
			e.Handle(http.MethodHead, r.Path, a.chain(r)...)
		}
	}
	return e, nil
}
