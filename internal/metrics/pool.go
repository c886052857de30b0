package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// WatchPool exposes the pgxpool statistics (foodsafe_db_pool_*), read at
// every scrape.
func (m *Metrics) WatchPool(stat func() *pgxpool.Stat) {
	if m == nil {
		return
	}
	m.reg.MustRegister(newPoolCollector(stat))
}

// poolCollector turns pgxpool.Stat into gauges and counters.
type poolCollector struct {
	stat  func() *pgxpool.Stat
	descs []poolDesc
}

type poolDesc struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*pgxpool.Stat) float64
}

func newPoolCollector(stat func() *pgxpool.Stat) *poolCollector {
	d := func(name, help string, kind prometheus.ValueType, v func(*pgxpool.Stat) float64) poolDesc {
		return poolDesc{prometheus.NewDesc(prometheus.BuildFQName(namespace, "db_pool", name), help, nil, nil), kind, v}
	}
	g, c := prometheus.GaugeValue, prometheus.CounterValue
	return &poolCollector{stat: stat, descs: []poolDesc{
		d("acquired_connections", "Connections checked out by queries now.", g, func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }),
		d("idle_connections", "Open connections waiting for a query.", g, func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }),
		d("constructing_connections", "Connections being opened.", g, func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }),
		d("total_connections", "Open connections: acquired, idle and being opened.", g, func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }),
		d("max_connections", "The pool's size limit (pool_max_conns).", g, func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }),
		d("acquires_total", "Successful connection acquisitions.", c, func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }),
		d("acquire_duration_seconds_total", "Time spent acquiring connections, successful acquisitions only.", c, func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }),
		d("empty_acquires_total", "Acquisitions that had to wait because no connection was idle.", c, func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }),
		d("empty_acquire_wait_seconds_total", "Time spent waiting by acquisitions that found no idle connection.", c, func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }),
		d("canceled_acquires_total", "Acquisitions abandoned because their context ended (client gone, timeout).", c, func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }),
		d("new_connections_total", "Connections opened.", c, func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }),
		d("max_lifetime_destroyed_total", "Connections closed for reaching pool_max_conn_lifetime.", c, func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }),
		d("max_idle_destroyed_total", "Connections closed for idling past pool_max_conn_idle_time.", c, func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }),
	}}
}

func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range p.descs {
		ch <- d.desc
	}
}

func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.stat()
	for _, d := range p.descs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.kind, d.value(s))
	}
}
