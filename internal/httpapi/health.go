package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/version"
)

// HealthStatus is the body of /health/live and /health/ready.
type HealthStatus struct {
	Status string `json:"status"`
}

// VersionReport is the body of /health/version.
type VersionReport struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	// SchemaVersion is the database's applied migration, null when the
	// database cannot be asked.
	SchemaVersion *int64 `json:"schemaVersion"`
}

func (a *API) healthLive(c *gin.Context) {
	c.PureJSON(http.StatusOK, HealthStatus{Status: "ok"})
}

// healthReady answers 200 only when the database and the file store
// answer within ReadyTimeout, so a load balancer stops routing to a
// process that cannot serve.
func (a *API) healthReady(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), a.cfg.ReadyTimeout)
	defer cancel()
	if err := a.store.Ping(ctx); err != nil {
		a.log.WarnContext(ctx, "readiness probe failed", "request_id", requestID(c), "error", err)
		a.fail(c, apperr.New(apperr.DependencyUnavailable, "The database is not reachable."))
		return
	}
	if err := a.blobs.Ping(ctx); err != nil {
		a.log.WarnContext(ctx, "readiness probe failed", "request_id", requestID(c), "error", err)
		a.fail(c, apperr.New(apperr.DependencyUnavailable, "The file store is not reachable."))
		return
	}
	c.PureJSON(http.StatusOK, HealthStatus{Status: "ready"})
}

func (a *API) healthVersion(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), a.cfg.ReadyTimeout)
	defer cancel()
	r := VersionReport{Version: version.Version, Commit: version.Commit, GoVersion: version.GoVersion()}
	if v, err := a.store.SchemaVersion(ctx); err == nil {
		r.SchemaVersion = &v
	}
	c.PureJSON(http.StatusOK, r)
}
