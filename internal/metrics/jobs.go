package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Maintenance jobs (compaction, retention, garbage collection: anything
// that runs in the background on a schedule) report through a Job:
//
//	job := m.Job("audit-retention", time.Hour) // once, at start-up
//	...
//	start := time.Now()
//	rows, err := runOnce(ctx)
//	job.Observe(start, rows, err) // after every run
//
// which feeds five families labelled by task (the job's name; not "job",
// which Prometheus sets on every scraped series to the scrape job's name,
// renaming ours to exported_job and merging the jobs of one target):
//
//	foodsafe_maintenance_runs_total{task,result="ok"|"error"}
//	foodsafe_maintenance_rows_total{task}             rows the successful runs affected
//	foodsafe_maintenance_run_duration_seconds{task}   histogram, failed runs included
//	foodsafe_maintenance_last_success_timestamp_seconds{task}
//	foodsafe_maintenance_interval_seconds{task}       the schedule declared with Job
//
// so one alert covers every job: time() - last_success > 3 * interval.
// last_success starts at the time the job is declared (process start), so
// a job that never succeeds shows a lag growing from start-up rather than
// one of 56 years.

type jobFamilies struct {
	runs     *prometheus.CounterVec
	rows     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	last     *prometheus.GaugeVec
	interval *prometheus.GaugeVec
	declared *series[string, *Job]
}

func (f *jobFamilies) init(reg *prometheus.Registry) {
	label := []string{"task"}
	f.runs = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "maintenance", Name: "runs_total",
		Help: "Runs of maintenance jobs, by job and result (ok, error).",
	}, []string{"task", "result"}))
	f.rows = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "maintenance", Name: "rows_total",
		Help: "Rows (or objects) affected by successful runs of maintenance jobs.",
	}, label))
	f.duration = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "maintenance", Name: "run_duration_seconds",
		Help:    "Duration of maintenance job runs, failed runs included.",
		Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900},
	}, label))
	f.last = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "maintenance", Name: "last_success_timestamp_seconds",
		Help: "Unix time of the job's last successful run; the time the job was declared (process start) until it first succeeds.",
	}, label))
	f.interval = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "maintenance", Name: "interval_seconds",
		Help: "How often the job is scheduled to run.",
	}, label))
	f.declared = newSeries(func(name string) *Job {
		j := &Job{
			ok:       f.runs.WithLabelValues(name, "ok"),
			failed:   f.runs.WithLabelValues(name, "error"),
			rows:     f.rows.WithLabelValues(name),
			duration: f.duration.WithLabelValues(name),
			last:     f.last.WithLabelValues(name),
			interval: f.interval.WithLabelValues(name),
		}
		j.last.SetToCurrentTime()
		return j
	})
}

// Job is the instrumentation of one maintenance job. A nil *Job (from a
// nil *Metrics) records nothing.
type Job struct {
	ok, failed, rows prometheus.Counter
	duration         prometheus.Observer
	last, interval   prometheus.Gauge
}

// Job declares a maintenance job scheduled every interval and returns its
// instrumentation; declaring a name again returns the same Job (with the
// new interval). The name is a label value: lower-case letters, digits
// and hyphens, at most 40 characters, fixed in code. Anything else panics,
// since it is a programming error.
func (m *Metrics) Job(name string, interval time.Duration) *Job {
	if m == nil {
		return nil
	}
	if !nameRule.MatchString(name) {
		panic(fmt.Sprintf("metrics: job name %q must match %s", name, nameRule))
	}
	j := m.jobs.declared.get(name)
	j.interval.Set(interval.Seconds())
	return j
}

// Observe records one run that started at start, affected rows and ended
// with err (nil: success).
func (j *Job) Observe(start time.Time, rows int64, err error) {
	if j == nil {
		return
	}
	j.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		j.failed.Inc()
		return
	}
	j.ok.Inc()
	j.rows.Add(float64(rows))
	j.last.SetToCurrentTime()
}
