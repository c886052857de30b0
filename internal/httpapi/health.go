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

func (a *API) healthLive(c *gin.Context) error {
	c.PureJSON(http.StatusOK, HealthStatus{Status: "ok"})
	return nil
}

// healthReady answers 200 only when the database answers within
// ReadyTimeout and the file store can take uploads, so a load balancer
// stops routing to a process that cannot serve.
func (a *API) healthReady(c *gin.Context) error {
	ctx, cancel := context.WithTimeout(c.Request.Context(), a.cfg.ReadyTimeout)
	defer cancel()
	if err := a.store.Ping(ctx); err != nil {
		return apperr.New(apperr.DependencyUnavailable, "The database is not reachable.").WithCause(err)
	}
	if err := a.blobs.Ping(ctx); err != nil {
		return apperr.New(apperr.DependencyUnavailable, "The file store cannot take uploads.").WithCause(err)
	}
	c.PureJSON(http.StatusOK, HealthStatus{Status: "ready"})
	return nil
}

func (a *API) healthVersion(c *gin.Context) error {
	ctx, cancel := context.WithTimeout(c.Request.Context(), a.cfg.ReadyTimeout)
	defer cancel()
	r := VersionReport{Version: version.Version, Commit: version.Commit, GoVersion: version.GoVersion()}
	if v, err := a.store.SchemaVersion(ctx); err == nil {
		r.SchemaVersion = &v
	}
	c.PureJSON(http.StatusOK, r)
	return nil
}
