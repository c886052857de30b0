package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AuditDrop says why audit events were dropped.
type AuditDrop string

// The audit drop reasons.
const (
	// AuditBufferFull: the in-memory buffer was full when the request ended.
	AuditBufferFull AuditDrop = "buffer-full"
	// AuditBatchFailed: a batch could not be written and could not be kept
	// for a retry (the database refused its data, or the retry would not
	// fit the buffer).
	AuditBatchFailed AuditDrop = "batch-failed"
)

type auditFamilies struct {
	written  prometheus.Counter
	counted  prometheus.Counter
	dropped  map[AuditDrop]prometheus.Counter
	failures prometheus.Counter
	batch    prometheus.Histogram
}

func (f *auditFamilies) init(reg *prometheus.Registry) {
	f.written = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "audit", Name: "events_written_total",
		Help: "Audit events written to audit_events.",
	}))
	dropped := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "audit", Name: "events_dropped_total",
		Help: "Audit events lost, by reason (buffer-full, batch-failed); requests audited by shape count one each.",
	}, []string{"reason"}))
	f.dropped = map[AuditDrop]prometheus.Counter{}
	for _, r := range []AuditDrop{AuditBufferFull, AuditBatchFailed} {
		f.dropped[r] = dropped.WithLabelValues(string(r))
	}
	f.counted = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "audit", Name: "requests_counted_total",
		Help: "Requests audited by shape, written to audit_counts (a row per minute and shape, whatever the number of requests).",
	}))
	f.failures = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "audit", Name: "batch_failures_total",
		Help: "Audit batches the database did not accept (kept for a retry or dropped).",
	}))
	f.batch = register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "audit", Name: "batch_duration_seconds",
		Help:    "Time to write one audit batch (COPY), failed attempts included.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}))
}

// AuditBatch records one attempt to write n events that took d; err nil
// means they were written.
func (m *Metrics) AuditBatch(n int, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.audit.batch.Observe(d.Seconds())
	if err != nil {
		m.audit.failures.Inc()
		return
	}
	m.audit.written.Add(float64(n))
}

// AuditCounted records n requests audited by shape, written.
func (m *Metrics) AuditCounted(n int) {
	if m == nil {
		return
	}
	m.audit.counted.Add(float64(n))
}

// AuditDropped records n events lost for reason r.
func (m *Metrics) AuditDropped(r AuditDrop, n int) {
	if m == nil {
		return
	}
	if c, ok := m.audit.dropped[r]; ok {
		c.Add(float64(n))
	}
}

// WatchAuditBuffer exposes foodsafe_audit_buffered_events from buffered,
// read at every scrape.
func (m *Metrics) WatchAuditBuffer(buffered func() int) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "audit", Name: "buffered_events",
		Help: "Audit events held in memory, not yet written (queued plus the batch being built).",
	}, func() float64 { return float64(buffered()) }))
}
