package httpapi

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/singleflight"

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
// stops routing to a process that cannot serve. Probes that arrive while
// one is running share its answer (health.ready): a flood of them costs
// one probe at a time, never a pool connection each.
func (a *API) healthReady(c *gin.Context) error {
	v, _, _ := a.health.ready.Do("ready", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), a.cfg.ReadyTimeout)
		defer cancel()
		if err := a.store.Ping(ctx); err != nil {
			return apperr.New(apperr.DependencyUnavailable, "The database is not reachable.").WithCause(err), nil
		}
		if err := a.blobs.Ping(ctx); err != nil {
			return apperr.New(apperr.DependencyUnavailable, "The file store cannot take uploads.").WithCause(err), nil
		}
		return nil, nil
	})
	if err, _ := v.(error); err != nil {
		return err
	}
	c.PureJSON(http.StatusOK, HealthStatus{Status: "ready"})
	return nil
}

// healthVersion answers from memory: the schema version is read at most
// once per schemaVersionFor (health.schema), by one request at a time.
func (a *API) healthVersion(c *gin.Context) error {
	r := VersionReport{Version: version.Version, Commit: version.Commit, GoVersion: version.GoVersion(),
		SchemaVersion: a.health.schemaVersion(c.Request.Context(), a.now(), func(ctx context.Context) (int64, error) {
			ctx, cancel := context.WithTimeout(ctx, a.cfg.ReadyTimeout)
			defer cancel()
			return a.store.SchemaVersion(ctx)
		})}
	c.PureJSON(http.StatusOK, r)
	return nil
}

// schemaVersionFor is how long /health/version answers the schema version
// it read: a migration shows within that time, and a flood of the route
// costs one small query per that time.
const schemaVersionFor = 5 * time.Second

// healthState is what the health routes share between requests.
type healthState struct {
	ready  singleflight.Group
	schema singleflight.Group

	mu       sync.Mutex
	version  int64
	readAt   time.Time
	haveRead bool
}

// schemaVersion is the schema version read less than schemaVersionFor
// ago, or read now (by one request; others wait for it); nil when the
// database cannot be asked.
func (h *healthState) schemaVersion(ctx context.Context, now time.Time, read func(context.Context) (int64, error)) *int64 {
	h.mu.Lock()
	if h.haveRead && now.Sub(h.readAt) < schemaVersionFor {
		v := h.version
		h.mu.Unlock()
		return &v
	}
	h.mu.Unlock()
	v, err, _ := h.schema.Do("schema", func() (any, error) {
		v, err := read(context.WithoutCancel(ctx))
		if err == nil {
			h.mu.Lock()
			h.version, h.readAt, h.haveRead = v, now, true
			h.mu.Unlock()
		}
		return v, err
	})
	if err != nil {
		return nil
	}
	n := v.(int64)
	return &n
}
