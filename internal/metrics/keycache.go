package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// KeyCache is the state and counters of a key cache (KeyCache).
type KeyCache struct {
	// Live: the cache is in use (listener up and recently proved).
	Live bool
	// Size is the number of keys held.
	Size int
	// Hits, Misses (looked up, then cached) and Bypasses (looked up
	// because the cache was off) count key authentications; Changes
	// counts key changes heard, Unreadable those whose payload named no
	// key (each dropped every key); DatabaseLookups counts the lookups
	// run (concurrent misses of one key share one).
	Hits, Misses, Bypasses, Changes, Unreadable, DatabaseLookups uint64
}

// WatchKeyCache exports the key cache's state and counters. An operator
// alerts on foodsafe_key_cache_live == 0 while FOODSAFE_KEY_CACHE is on
// (every request then costs a key lookup) and reads the hit ratio from
// the lookups counter.
func (m *Metrics) WatchKeyCache(stats func() KeyCache) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&keyCacheCollector{stats: stats,
		live: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "live"),
			"1 while the key cache is in use: listening for key changes on a connection proved alive within the last second.", nil, nil),
		size: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "keys"),
			"Keys held by the key cache.", nil, nil),
		lookups: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "lookups_total"),
			"Key authentications by how the key was found: hit (from the cache), miss (looked up, or waiting on the lookup of the same key another request started, then cached), bypass (looked up: cache off or not live).",
			[]string{"result"}, nil),
		changes: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "changes_heard_total"),
			"Key changes heard by the listener; each drops the key it names, or every cached key.", nil, nil),
		unreadable: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "changes_unreadable_total"),
			"Key changes heard whose payload names no key this release can read; each dropped every cached key.", nil, nil),
		database: prometheus.NewDesc(prometheus.BuildFQName(namespace, "key_cache", "database_lookups_total"),
			"Key lookups run in the database: one per bypass, one per miss except that concurrent misses of one key share one.", nil, nil),
	})
}

type keyCacheCollector struct {
	stats                                              func() KeyCache
	live, size, lookups, changes, unreadable, database *prometheus.Desc
}

func (k *keyCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- k.live
	ch <- k.size
	ch <- k.lookups
	ch <- k.changes
	ch <- k.unreadable
	ch <- k.database
}

func (k *keyCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := k.stats()
	live := 0.0
	if s.Live {
		live = 1
	}
	ch <- prometheus.MustNewConstMetric(k.live, prometheus.GaugeValue, live)
	ch <- prometheus.MustNewConstMetric(k.size, prometheus.GaugeValue, float64(s.Size))
	ch <- prometheus.MustNewConstMetric(k.lookups, prometheus.CounterValue, float64(s.Hits), "hit")
	ch <- prometheus.MustNewConstMetric(k.lookups, prometheus.CounterValue, float64(s.Misses), "miss")
	ch <- prometheus.MustNewConstMetric(k.lookups, prometheus.CounterValue, float64(s.Bypasses), "bypass")
	ch <- prometheus.MustNewConstMetric(k.changes, prometheus.CounterValue, float64(s.Changes))
	ch <- prometheus.MustNewConstMetric(k.unreadable, prometheus.CounterValue, float64(s.Unreadable))
	ch <- prometheus.MustNewConstMetric(k.database, prometheus.CounterValue, float64(s.DatabaseLookups))
}
