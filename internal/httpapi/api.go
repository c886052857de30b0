// Package httpapi is the HTTP face of the service: the route table, the
// middleware chain and one file per resource. Handlers stay small: parse,
// validate, one store call, respond. Errors travel as *apperr.Error and are
// rendered by problem.go.
package httpapi

import (
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
)

// Deps are the collaborators of the HTTP layer.
type Deps struct {
	Config config.Config
	Store  *store.Store
	Log    *slog.Logger
}

// API holds the dependencies shared by handlers and middleware.
type API struct {
	cfg   config.Config
	store *store.Store
	log   *slog.Logger
}

// New builds the gin engine with every route of routes().
func New(d Deps) *gin.Engine {
	a := &API{cfg: d.Config, store: d.Store, log: d.Log}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// Redirects would answer with HTML bodies and hide client mistakes; an
	// API answers 404/405 problems instead.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	// Client IPs come from the socket; trusting forwarding headers is a
	// deployment decision this service does not make for the operator.
	_ = e.SetTrustedProxies(nil)

	e.Use(withRequestID, a.recoverer, a.accessLog, a.strictQuery)
	e.NoRoute(func(c *gin.Context) {
		a.fail(c, apperr.ErrNotFound)
	})
	e.NoMethod(func(c *gin.Context) {
		a.fail(c, apperr.New(apperr.MethodNotAllowed,
			"Method %s is not allowed here; see the Allow header.", c.Request.Method))
	})
	for _, r := range a.routes() {
		e.Handle(r.Method, r.Path, r.Handlers...)
	}
	return e
}
