// Package metrics is the service's Prometheus instrumentation: one registry
// per service instance (never the global default registry, so parallel
// tests never share counters), the families docs/reference/metrics.md lists,
// and small methods the other packages call when something happens.
//
// A nil *Metrics records nothing: FOODSAFE_METRICS_ADDR="" turns
// instrumentation off entirely, so the overhead measured with metrics off
// is the cost of no instrumentation at all, not of an unscraped registry.
//
// Every label value is bounded by construction: route templates (never raw
// paths), a fixed set of methods, status codes the service itself chooses,
// the 24 collection names, and typed constants for everything else. No
// family carries a restaurant id, a key id or anything a client chose.
package metrics

import (
	"log/slog"
	"net/http"
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/version"
)

// namespace prefixes every family of ours.
const namespace = "foodsafe"

// Metrics holds the registry and every family of the service.
type Metrics struct {
	reg     *prometheus.Registry
	http    httpFamilies
	auth    authFamilies
	limiter limiterFamilies
	ingest  ingestFamilies
	walks   walkFamilies
	audit   auditFamilies
	jobs    jobFamilies
}

// New builds a registry with the Go runtime, process and build-info
// collectors and every family of the service.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "build_info",
			Help:        "Always 1; the labels say which build is running (version and commit stamped at link time).",
			ConstLabels: prometheus.Labels{"version": version.Version, "commit": version.Commit, "goversion": version.GoVersion()},
		}, func() float64 { return 1 }),
	)
	m := &Metrics{reg: reg}
	m.http.init(reg)
	m.auth.init(reg)
	m.limiter.init(reg)
	m.ingest.init(reg)
	m.walks.init(reg)
	m.audit.init(reg)
	m.jobs.init(reg)
	return m
}

// Handler serves the registry in the Prometheus exposition formats, and
// counts its own scrapes (promhttp_metric_handler_*). Collection errors are
// logged and the rest of the registry is still served.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	return promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	}))
}

// register adds a collector built by the caller and returns it.
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	reg.MustRegister(c)
	return c
}

// series caches the children of a vector by a comparable key, so a hot
// path finds its series with one map read under a read lock, without
// hashing label values or allocating a label slice on every event.
type series[K comparable, M any] struct {
	mu     sync.RWMutex
	m      map[K]M
	create func(K) M
}

func newSeries[K comparable, M any](create func(K) M) *series[K, M] {
	return &series[K, M]{m: map[K]M{}, create: create}
}

func (s *series[K, M]) get(k K) M {
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[k]; ok {
		return v
	}
	v = s.create(k)
	s.m[k] = v
	return v
}

// collectionLabel is the collection as a label value: one of the 24 names,
// or "unknown" for anything else, so a caller's mistake cannot turn client
// input into a label.
func collectionLabel(name string) string {
	if _, ok := catalog.Lookup(name); ok {
		return name
	}
	return "unknown"
}

// nameRule is what a caller-chosen label value (a job name) must look like.
var nameRule = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)
