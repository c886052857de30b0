package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// gather reads the registry into family name -> metrics.
func gather(t *testing.T, m *Metrics) map[string][]*dto.Metric {
	t.Helper()
	fams, err := m.reg.Gather()
	require.NoError(t, err)
	out := map[string][]*dto.Metric{}
	for _, f := range fams {
		out[f.GetName()] = f.GetMetric()
	}
	return out
}

// one returns the value of the single series of name whose labels include kv.
func one(t *testing.T, fams map[string][]*dto.Metric, name string, kv ...string) float64 {
	t.Helper()
	var found []*dto.Metric
next:
	for _, m := range fams[name] {
		for i := 0; i+1 < len(kv); i += 2 {
			ok := false
			for _, l := range m.GetLabel() {
				ok = ok || (l.GetName() == kv[i] && l.GetValue() == kv[i+1])
			}
			if !ok {
				continue next
			}
		}
		found = append(found, m)
	}
	require.Len(t, found, 1, "%s%v", name, kv)
	switch m := found[0]; {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s: unexpected type", name)
	return 0
}

// A nil *Metrics (metrics off) accepts every call and records nothing.
func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	recordEveryKind(m)
	m.WatchPool(nil)
	j := m.Job("compaction", time.Minute)
	require.Nil(t, j)
	j.Observe(time.Now(), 5, nil)
}

// No family carries a label Prometheus assigns to every scraped series
// (job, instance) or reserves (__*): a scrape would rename ours to
// exported_job and merge what it told apart. Every recorder is called
// first, so every family has a series to show its labels.
func TestNoLabelPrometheusAssigns(t *testing.T) {
	m := New()
	recordEveryKind(m)
	m.Job("compaction", time.Minute).Observe(time.Now(), 5, nil)
	f := gather(t, m)
	require.Contains(t, f, "foodsafe_maintenance_runs_total")
	for name, ms := range f {
		for _, s := range ms {
			for _, l := range s.GetLabel() {
				n := l.GetName()
				require.False(t, n == "job" || n == "instance" || strings.HasPrefix(n, "__"),
					"%s has a label named %q, which Prometheus assigns to targets", name, n)
			}
		}
	}
}

// Values a caller could get wrong never become new series: an unknown
// collection, rejection reason or authentication outcome is folded into
// a fixed value.
func TestLabelValuesStayBounded(t *testing.T) {
	m := New()
	m.IngestWrite(WriteMutation, "no-such-collection", Rejected, "made-up-reason")
	m.IngestWrite(WriteDelivery, "areas", Applied, "")
	m.Authentication(CredentialKey, "made-up-outcome")
	m.HTTPFinished("/r", "PROPFIND", 200, time.Millisecond, 1)
	f := gather(t, m)
	require.Equal(t, 1.0, one(t, f, "foodsafe_ingest_writes_total", "write", "mutation", "collection", "unknown", "outcome", "rejected"))
	require.Equal(t, 1.0, one(t, f, "foodsafe_ingest_rejections_total", "collection", "unknown", "reason", "internal-error"))
	require.Equal(t, 1.0, one(t, f, "foodsafe_ingest_writes_total", "write", "delivery", "collection", "", "outcome", "applied"),
		"deliveries carry no collection")
	require.Equal(t, 1.0, one(t, f, "foodsafe_authentications_total", "credential", "none", "outcome", "error"))
	require.Equal(t, 1.0, one(t, f, "foodsafe_http_requests_total", "route", "/r", "method", "OTHER", "code", "200"))
	for _, m := range f["foodsafe_authentications_total"] {
		for _, l := range m.GetLabel() {
			require.NotEqual(t, "made-up-outcome", l.GetValue())
		}
	}
}

// Series operators alert on exist at zero before the first event, so
// rate() and absence checks work from the first scrape.
func TestSeriesStartAtZero(t *testing.T) {
	f := gather(t, New())
	require.Equal(t, 0.0, one(t, f, "foodsafe_ingest_writes_total", "write", "mutation", "collection", "temperature-readings", "outcome", "conflicted"))
	require.Len(t, f["foodsafe_ingest_writes_total"], 24*4+3*4+4+4)
	require.Equal(t, 0.0, one(t, f, "foodsafe_authentications_total", "credential", "session", "outcome", "grants-changed"))
	require.Equal(t, 0.0, one(t, f, "foodsafe_audit_events_dropped_total", "reason", "buffer-full"))
	require.Equal(t, 0.0, one(t, f, "foodsafe_walk_cursor_refusals_total", "walk", "records", "reason", "expired"))
	require.Equal(t, 0.0, one(t, f, "foodsafe_ratelimit_limited_total", "bucket", "ip"))
	require.NotContains(t, f, "foodsafe_maintenance_runs_total", "no job declared, no series")
}

// The maintenance job API: runs by result, rows of successful runs, the
// last success, the declared interval.
func TestJobs(t *testing.T) {
	m := New()
	declared := time.Now()
	j := m.Job("audit-retention", time.Hour)
	require.Same(t, j, m.Job("audit-retention", 2*time.Hour), "declaring again returns the same job")
	f := gather(t, m)
	last := one(t, f, "foodsafe_maintenance_last_success_timestamp_seconds", "task", "audit-retention")
	require.InDelta(t, float64(declared.Unix()), last, 5, "declared at start-up counts as the last success")
	require.Equal(t, 7200.0, one(t, f, "foodsafe_maintenance_interval_seconds", "task", "audit-retention"))

	j.Observe(time.Now(), 120, nil)
	j.Observe(time.Now(), 30, nil)
	j.Observe(time.Now(), 99, errors.New("lock timeout"))
	f = gather(t, m)
	require.Equal(t, 2.0, one(t, f, "foodsafe_maintenance_runs_total", "task", "audit-retention", "result", "ok"))
	require.Equal(t, 1.0, one(t, f, "foodsafe_maintenance_runs_total", "task", "audit-retention", "result", "error"))
	require.Equal(t, 150.0, one(t, f, "foodsafe_maintenance_rows_total", "task", "audit-retention"), "failed runs add no rows")
	require.Equal(t, 3.0, one(t, f, "foodsafe_maintenance_run_duration_seconds", "task", "audit-retention"))
	require.GreaterOrEqual(t, one(t, f, "foodsafe_maintenance_last_success_timestamp_seconds", "task", "audit-retention"), last)

	for _, bad := range []string{"", "Audit", "audit retention", "a/b", "x" + string(make([]byte, 40))} {
		require.Panics(t, func() { m.Job(bad, time.Minute) }, "%q", bad)
	}
}

// The hot path of every request finds its cached series without
// allocating once the series exists.
func TestHTTPFinishedDoesNotAllocate(t *testing.T) {
	m := New()
	m.HTTPFinished("/v1/restaurants", "GET", 200, time.Millisecond, 100)
	allocs := testing.AllocsPerRun(1000, func() {
		m.HTTPStarted()
		m.HTTPFinished("/v1/restaurants", "GET", 200, time.Millisecond, 100)
		m.Authentication(CredentialKey, AuthOK)
		m.WalkPage(WalkRecords, false, 50)
		m.IngestWrite(WriteMutation, "areas", Applied, "")
	})
	require.Zero(t, allocs)
}

// BenchmarkHTTPFinished is the metrics cost of one request.
func BenchmarkHTTPFinished(b *testing.B) {
	m := New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.HTTPStarted()
			m.HTTPFinished("/v1/restaurants/{restaurantId}/collections/{collection}/records", "GET", 200, 3*time.Millisecond, 4000)
			m.Authentication(CredentialKey, AuthOK)
		}
	})
}

// recordEveryKind calls every recorder of m once (the maintenance jobs'
// aside), with a rejected write so that the rejection family has a series.
func recordEveryKind(m *Metrics) {
	m.HTTPStarted()
	m.HTTPFinished("/x", "GET", 200, time.Millisecond, 10)
	m.Authentication(CredentialKey, AuthOK)
	m.RateLimited(BucketKey)
	m.RateLimitFallback()
	m.WatchRateLimiter(func() string { return BackendRedis })
	m.IngestWrite(WriteMutation, "areas", Rejected, "invalid-request")
	m.UploadVerified(WriteAsset, "drive-files", 10)
	m.DigestMismatch(WriteAsset, "drive-files")
	m.WalkPage(WalkRecords, true, 3)
	m.CursorRefused(WalkRecords, CursorExpired)
	m.AuditBatch(3, time.Millisecond, nil)
	m.AuditDropped(AuditBufferFull, 1)
	m.WatchAuditBuffer(func() int { return 0 })
}
