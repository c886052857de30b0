package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Unmatched is the route label of requests no route matched (404s of
// unknown paths, 405s), so raw paths never become label values.
const Unmatched = "(unmatched)"

// durationBuckets span a cached health probe (well under a millisecond) to
// a slow upload; API requests sit between 1 and 50 ms on a healthy host.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// sizeBuckets go from a problem document to the largest uploaded file
// (50 MiB by default) in powers of 4.
var sizeBuckets = prometheus.ExponentialBuckets(64, 4, 11)

type httpFamilies struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	size     *prometheus.HistogramVec
	inFlight prometheus.Gauge
	cache    *series[httpKey, httpSeries]
}

type httpKey struct {
	route, method string
	code          int
}

type httpSeries struct {
	requests       prometheus.Counter
	duration, size prometheus.Observer
}

func (f *httpFamilies) init(reg *prometheus.Registry) {
	f.requests = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_total",
		Help: "Requests answered on the API port, by route template, method and status code.",
	}, []string{"route", "method", "code"}))
	f.duration = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time from the first middleware to the end of the handler chain, by route template and method.",
		Buckets: durationBuckets,
	}, []string{"route", "method"}))
	f.size = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "http", Name: "response_size_bytes",
		Help:    "Response body sizes, by route template and method.",
		Buckets: sizeBuckets,
	}, []string{"route", "method"}))
	f.inFlight = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_in_flight",
		Help: "Requests being served on the API port right now.",
	}))
	f.cache = newSeries(func(k httpKey) httpSeries {
		return httpSeries{
			requests: f.requests.WithLabelValues(k.route, k.method, strconv.Itoa(k.code)),
			duration: f.duration.WithLabelValues(k.route, k.method),
			size:     f.size.WithLabelValues(k.route, k.method),
		}
	})
}

// HTTPStarted counts a request in flight; pair it with HTTPFinished.
func (m *Metrics) HTTPStarted() {
	if m == nil {
		return
	}
	m.http.inFlight.Inc()
}

// HTTPFinished records an answered request. route is the route template
// (or Unmatched); the method is folded into the fixed set methodLabel
// knows, since a client can send any token as a method.
func (m *Metrics) HTTPFinished(route, method string, code int, d time.Duration, size int) {
	if m == nil {
		return
	}
	m.http.inFlight.Dec()
	s := m.http.cache.get(httpKey{route: route, method: methodLabel(method), code: code})
	s.requests.Inc()
	s.duration.Observe(d.Seconds())
	s.size.Observe(float64(max(size, 0)))
}

// methodLabel maps a request method onto a bounded set without allocating.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}
