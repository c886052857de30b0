package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/catalog"
)

// Credential is the kind of credential an authentication looked at.
type Credential string

// The credential label values.
const (
	// CredentialNone: no credential, or one that does not parse.
	CredentialNone    Credential = "none"
	CredentialKey     Credential = "key"
	CredentialSession Credential = "session"
)

// AuthOK is the outcome of a successful authentication; refusals use the
// reason the credential was refused (missing, malformed, unknown, revoked,
// expired, no-grants, grants-changed), and AuthError an authentication the
// database could not decide.
const (
	AuthOK    = "ok"
	AuthError = "error"
)

// authOutcomes are the outcomes each credential kind can have; they are
// created at zero so rate() and alerts see them before the first event.
var authOutcomes = map[Credential][]string{
	CredentialNone:    {"missing", "malformed", AuthError},
	CredentialKey:     {AuthOK, "unknown", "revoked", "expired", "no-grants", AuthError},
	CredentialSession: {AuthOK, "unknown", "revoked", "expired", "no-grants", "grants-changed", AuthError},
}

type authFamilies struct {
	// known holds every valid pair; read-only after init, so no lock.
	known map[authKey]prometheus.Counter
}

type authKey struct {
	credential Credential
	outcome    string
}

func (f *authFamilies) init(reg *prometheus.Registry) {
	vec := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "authentications_total",
		Help: "Authentications of partner requests, by credential kind (none, key, session) and outcome (ok, the refusal reason, or error).",
	}, []string{"credential", "outcome"}))
	f.known = map[authKey]prometheus.Counter{}
	for c, outcomes := range authOutcomes {
		for _, o := range outcomes {
			f.known[authKey{c, o}] = vec.WithLabelValues(string(c), o)
		}
	}
}

// Authentication records the outcome of one authentication. The outcome
// must be AuthOK, AuthError or an auth.Reason; anything else is counted as
// none/error rather than becoming a new series.
func (m *Metrics) Authentication(c Credential, outcome string) {
	if m == nil {
		return
	}
	counter, ok := m.auth.known[authKey{c, outcome}]
	if !ok {
		counter = m.auth.known[authKey{CredentialNone, AuthError}]
	}
	counter.Inc()
}

// Bucket is what a rate-limit budget is counted against.
type Bucket string

// The rate-limit buckets.
const (
	BucketKey Bucket = "key"
	BucketIP  Bucket = "ip"
)

// Limiter backend label values.
const (
	// BackendRedis: budgets shared through Redis.
	BackendRedis = "redis"
	// BackendFallback: Redis is configured but failing; budgets are per
	// process, in memory, until Redis answers again.
	BackendFallback = "fallback"
	// BackendMemory: no Redis configured; per-process budgets by design.
	BackendMemory = "memory"
)

type limiterFamilies struct {
	limited   map[Bucket]prometheus.Counter
	fallbacks prometheus.Counter
}

func (f *limiterFamilies) init(reg *prometheus.Registry) {
	vec := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ratelimit", Name: "limited_total",
		Help: "Requests refused with 429 because their budget was spent, by bucket (key, or ip for unauthenticated requests).",
	}, []string{"bucket"}))
	f.limited = map[Bucket]prometheus.Counter{BucketKey: vec.WithLabelValues(string(BucketKey)), BucketIP: vec.WithLabelValues(string(BucketIP))}
	f.fallbacks = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ratelimit", Name: "fallbacks_total",
		Help: "Times the limiter gave up on Redis and counted in memory (at most once per 5 s cooldown).",
	}))
}

// RateLimited records a request refused with 429.
func (m *Metrics) RateLimited(b Bucket) {
	if m == nil {
		return
	}
	if c, ok := m.limiter.limited[b]; ok {
		c.Inc()
	}
}

// RateLimitFallback records the limiter falling back from Redis to memory.
func (m *Metrics) RateLimitFallback() {
	if m == nil {
		return
	}
	m.limiter.fallbacks.Inc()
}

// WatchRateLimiter exposes foodsafe_ratelimit_backend from backend, read at
// every scrape; it must return one of the Backend* values.
func (m *Metrics) WatchRateLimiter(backend func() string) {
	if m == nil {
		return
	}
	m.reg.MustRegister(&oneHot{
		desc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "ratelimit", "backend"),
			"1 for the store the limiter counts in now: redis, fallback (Redis configured but failing: per-process memory) or memory (no Redis configured).",
			[]string{"backend"}, nil),
		values: []string{BackendRedis, BackendFallback, BackendMemory},
		now:    backend,
	})
}

// oneHot is a gauge family with one series per value, 1 for the current
// value and 0 for the others.
type oneHot struct {
	desc   *prometheus.Desc
	values []string
	now    func() string
}

func (o *oneHot) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }

func (o *oneHot) Collect(ch chan<- prometheus.Metric) {
	cur := o.now()
	for _, v := range o.values {
		x := 0.0
		if v == cur {
			x = 1
		}
		ch <- prometheus.MustNewConstMetric(o.desc, prometheus.GaugeValue, x, v)
	}
}

// Write names an ingest write path.
type Write string

// The ingest write paths.
const (
	// WriteMutation: a record snapshot (PUT .../mutations/{mutationId}).
	WriteMutation Write = "mutation"
	// WriteAsset: the file a record names (PUT .../records/{recordId}/asset).
	WriteAsset Write = "asset"
	// WriteDelivery: a delivery (PUT .../deliveries/{deliveryId}).
	WriteDelivery Write = "delivery"
	// WriteDeliveryImage: a delivery photograph.
	WriteDeliveryImage Write = "delivery-image"
)

// Outcome is how an ingest write ended.
type Outcome string

// The ingest outcomes.
const (
	// Applied: stored as new.
	Applied Outcome = "applied"
	// Replayed: the same write again, answered with Idempotent-Replayed.
	Replayed Outcome = "replayed"
	// Conflicted: 409, an id reused for different content.
	Conflicted Outcome = "conflicted"
	// Rejected: any other failure; foodsafe_ingest_rejections_total says why.
	Rejected Outcome = "rejected"
)

// ReasonClientClosed is the rejection reason of a write whose client hung
// up before the answer (status 499); the others are problem type codes.
const ReasonClientClosed = "client-closed-request"

type ingestFamilies struct {
	writes, rejections, verified, bytes, mismatches *prometheus.CounterVec
	writeCache                                      *series[ingestKey, prometheus.Counter]
	rejectCache                                     *series[ingestKey, prometheus.Counter]
	verifiedCache, bytesCache, mismatchCache        *series[ingestKey, prometheus.Counter]
}

// ingestKey: detail is the outcome or the reason.
type ingestKey struct {
	write      Write
	collection string
	detail     string
}

func (f *ingestFamilies) init(reg *prometheus.Registry) {
	labels := []string{"write", "collection"}
	f.writes = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ingest", Name: "writes_total",
		Help: "Ingest writes that passed authentication and authorisation, by write (mutation, asset, delivery, delivery-image), collection (empty for deliveries) and outcome (applied, replayed, conflicted, rejected).",
	}, append(labels, "outcome")))
	f.rejections = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ingest", Name: "rejections_total",
		Help: "Rejected ingest writes by reason: the problem type code the client received (or client-closed-request).",
	}, append(labels, "reason")))
	f.verified = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ingest", Name: "uploads_verified_total",
		Help: "Uploaded files received whole whose bytes matched their Repr-Digest.",
	}, labels))
	f.bytes = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ingest", Name: "upload_bytes_total",
		Help: "Bytes of verified uploaded files.",
	}, labels))
	f.mismatches = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "ingest", Name: "digest_mismatches_total",
		Help: "Uploaded files refused because their bytes did not match their Repr-Digest.",
	}, labels))
	with := func(vec *prometheus.CounterVec, detail bool) *series[ingestKey, prometheus.Counter] {
		return newSeries(func(k ingestKey) prometheus.Counter {
			if detail {
				return vec.WithLabelValues(string(k.write), k.collection, k.detail)
			}
			return vec.WithLabelValues(string(k.write), k.collection)
		})
	}
	f.writeCache, f.rejectCache = with(f.writes, true), with(f.rejections, true)
	f.verifiedCache, f.bytesCache, f.mismatchCache = with(f.verified, false), with(f.bytes, false), with(f.mismatches, false)
	outcomes := []Outcome{Applied, Replayed, Conflicted, Rejected}
	for _, col := range catalog.Collections {
		for _, o := range outcomes {
			f.writeCache.get(ingestKey{WriteMutation, col.Name, string(o)})
		}
		if col.CarriesFiles {
			for _, o := range outcomes {
				f.writeCache.get(ingestKey{WriteAsset, col.Name, string(o)})
			}
			f.uploadSeries(ingestKey{write: WriteAsset, collection: col.Name})
		}
	}
	for _, o := range outcomes {
		f.writeCache.get(ingestKey{WriteDelivery, "", string(o)})
		f.writeCache.get(ingestKey{WriteDeliveryImage, "", string(o)})
	}
	f.uploadSeries(ingestKey{write: WriteDeliveryImage})
}

func (f *ingestFamilies) uploadSeries(k ingestKey) {
	f.verifiedCache.get(k)
	f.bytesCache.get(k)
	f.mismatchCache.get(k)
}

// target is the label pair of a write: deliveries have no collection.
func target(w Write, collection string) ingestKey {
	switch w {
	case WriteDelivery, WriteDeliveryImage:
		return ingestKey{write: w}
	}
	return ingestKey{write: w, collection: collectionLabel(collection)}
}

// IngestWrite records how an ingest write ended. reason is read only for
// Rejected: the problem type code the client received, or
// ReasonClientClosed.
func (m *Metrics) IngestWrite(w Write, collection string, o Outcome, reason string) {
	if m == nil {
		return
	}
	k := target(w, collection)
	k.detail = string(o)
	m.ingest.writeCache.get(k).Inc()
	if o == Rejected {
		k.detail = reasonLabel(reason)
		m.ingest.rejectCache.get(k).Inc()
	}
}

// reasonLabel keeps rejection reasons to the problem type codes.
func reasonLabel(r string) string {
	if r == ReasonClientClosed {
		return r
	}
	for _, k := range apperr.Kinds {
		if string(k.Code) == r {
			return r
		}
	}
	return string(apperr.Internal)
}

// UploadVerified records a file received whole whose digest matched.
func (m *Metrics) UploadVerified(w Write, collection string, bytes int64) {
	if m == nil {
		return
	}
	k := target(w, collection)
	m.ingest.verifiedCache.get(k).Inc()
	m.ingest.bytesCache.get(k).Add(float64(bytes))
}

// DigestMismatch records a file refused for not matching its digest.
func (m *Metrics) DigestMismatch(w Write, collection string) {
	if m == nil {
		return
	}
	m.ingest.mismatchCache.get(target(w, collection)).Inc()
}

// Walk names a paginated read.
type Walk string

// The walks.
const (
	// WalkRecords: the snapshot walk of a collection.
	WalkRecords Walk = "records"
	// WalkDeliveries: the delivery list.
	WalkDeliveries Walk = "deliveries"
	// WalkChanges: the first page of an incremental changes walk (only
	// what changed since a finished walk), and its refused changesCursors;
	// its later pages continue as records.
	WalkChanges Walk = "changes"
)

// CursorRefusal says why a cursor was refused (all are 400s).
type CursorRefusal string

// The cursor refusal reasons (cursor.Issuer counts them).
const (
	CursorMalformed CursorRefusal = "malformed"
	CursorMismatch  CursorRefusal = "mismatch"
	CursorExpired   CursorRefusal = "expired"
	// CursorAhead: a changesCursor naming a position the stream has not
	// reached (the data was restored or reset).
	CursorAhead CursorRefusal = "ahead"
)

type walkFamilies struct {
	pages, records, refusals *prometheus.CounterVec
	pageCache                *series[walkKey, prometheus.Counter]
	recordCache              *series[Walk, prometheus.Counter]
	refusalCache             *series[walkKey, prometheus.Counter]
}

// walkKey: detail is the page (first, next) or the refusal reason.
type walkKey struct {
	walk   Walk
	detail string
}

func (f *walkFamilies) init(reg *prometheus.Registry) {
	f.pages = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "walk", Name: "pages_total",
		Help: "Pages served by walk (records, deliveries, changes) and page (first: a walk starts; next: it continues with a cursor).",
	}, []string{"walk", "page"}))
	f.records = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "walk", Name: "items_total",
		Help: "Items returned in walk pages (records, tombstones included, or deliveries).",
	}, []string{"walk"}))
	f.refusals = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "walk", Name: "cursor_refusals_total",
		Help: "Cursors refused with 400, by walk and reason (malformed, mismatch, expired, ahead).",
	}, []string{"walk", "reason"}))
	f.pageCache = newSeries(func(k walkKey) prometheus.Counter { return f.pages.WithLabelValues(string(k.walk), k.detail) })
	f.recordCache = newSeries(func(w Walk) prometheus.Counter { return f.records.WithLabelValues(string(w)) })
	f.refusalCache = newSeries(func(k walkKey) prometheus.Counter { return f.refusals.WithLabelValues(string(k.walk), k.detail) })
	for _, w := range []Walk{WalkRecords, WalkDeliveries, WalkChanges} {
		f.pageCache.get(walkKey{w, "first"})
		if w != WalkChanges {
			f.pageCache.get(walkKey{w, "next"})
		}
		f.recordCache.get(w)
		for _, r := range []CursorRefusal{CursorMalformed, CursorMismatch, CursorExpired} {
			f.refusalCache.get(walkKey{w, string(r)})
		}
	}
	f.refusalCache.get(walkKey{WalkChanges, string(CursorAhead)})
}

// WalkPage records one page served: first when the request had no cursor,
// with items on it.
func (m *Metrics) WalkPage(w Walk, first bool, items int) {
	if m == nil {
		return
	}
	page := "next"
	if first {
		page = "first"
	}
	m.walks.pageCache.get(walkKey{w, page}).Inc()
	m.walks.recordCache.get(w).Add(float64(items))
}

// CursorRefused records a cursor refused with 400.
func (m *Metrics) CursorRefused(w Walk, r CursorRefusal) {
	if m == nil {
		return
	}
	m.walks.refusalCache.get(walkKey{w, string(r)}).Inc()
}
