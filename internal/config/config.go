// Package config turns the process environment into a Config. Every variable
// the service reads is declared here, once, with its default and its
// meaning (the desc tag); the few read elsewhere are listed in Elsewhere.
// The configuration reference (docs/reference/configuration.md, make docs)
// is generated from both.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/foodsafe/foodsafe/internal/clientip"
)

// Config is the whole runtime configuration of the foodsafe binary.
type Config struct {
	// DatabaseURL is the PostgreSQL connection string (pgx syntax).
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/foodsafe?sslmode=disable" desc:"PostgreSQL connection URL (pgx syntax); the pool size is pool_max_conns=N in the URL."`
	// Addr is the listen address of `foodsafe serve`.
	Addr string `env:"FOODSAFE_ADDR" envDefault:":8080" desc:"Listen address of the API (foodsafe serve)."`
	// BaseURL prefixes problem `type` URIs (relative "/problems/..." when
	// empty) and signed URLs (this server's address as the connection
	// reached it when empty); neither is ever derived from a request.
	BaseURL string `env:"FOODSAFE_BASE_URL" desc:"Public base URL, e.g. https://api.foodsafe.example: prefix of problem type URIs (unset: the relative /problems/<suffix>, never taken from the request), of signed download URLs of the filesystem store (unset: http:// and the address each connection reached on this server, never the request's Host) and the OpenAPI document's server. make run sets it to the address it serves on."`
	// MetricsAddr is the listen address of the operator listener: /metrics
	// and /debug/pprof/, never on the API port. Unset means
	// DefaultMetricsAddr; set to the empty string, it turns metrics off
	// (no listener, no instrumentation). Not an envDefault: the env
	// library would put the default back for an empty value.
	MetricsAddr string `env:"FOODSAFE_METRICS_ADDR" desc:"Listen address of the operator listener (/metrics, /debug/pprof/), never the API port; serve refuses to start when it is taken, naming this variable. Set to the empty string, metrics are off entirely (no listener, no instrumentation)."`
	// LogLevel is the minimum slog level: debug, info, warn or error.
	LogLevel slog.Level `env:"FOODSAFE_LOG_LEVEL" envDefault:"info" desc:"Minimum log level: debug, info, warn or error. Logs are JSON lines on stderr."`

	// ShutdownTimeout bounds how long in-flight requests may run after
	// SIGINT/SIGTERM before the server closes them.
	ShutdownTimeout time.Duration `env:"FOODSAFE_SHUTDOWN_TIMEOUT" envDefault:"20s" desc:"How long in-flight requests may finish after SIGINT or SIGTERM."`
	// ReadHeaderTimeout limits slow-loris clients: a request's line and
	// headers arrive in one round trip or a few, never in seconds.
	ReadHeaderTimeout time.Duration `env:"FOODSAFE_READ_HEADER_TIMEOUT" envDefault:"5s" desc:"Time to read a request's line and headers; a client slower than this is cut (slow-loris)."`
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration `env:"FOODSAFE_READ_TIMEOUT" envDefault:"60s" desc:"Time to read a whole request, body included (file uploads have FOODSAFE_UPLOAD_TIMEOUT)."`
	// WriteTimeout bounds writing a response.
	WriteTimeout time.Duration `env:"FOODSAFE_WRITE_TIMEOUT" envDefault:"60s" desc:"Time to write a response."`
	// IdleTimeout closes idle keep-alive connections: long enough for a
	// client's next request of a sync, short enough that connections
	// opened and left cost little. Behind a load balancer that reuses
	// connections it must exceed the balancer's own idle timeout.
	IdleTimeout time.Duration `env:"FOODSAFE_IDLE_TIMEOUT" envDefault:"30s" desc:"How long an idle keep-alive connection stays open. Behind a load balancer, set it above the balancer's idle timeout (e.g. 75s behind a 60s one), or the balancer may reuse a connection as it closes."`
	// MaxConnections caps the connections open at once, so a flood of
	// connections meets a clear refusal rather than the process's file
	// descriptor limit.
	MaxConnections int `env:"FOODSAFE_MAX_CONNECTIONS" envDefault:"4096" desc:"Connections the API listener holds open at once; beyond, a new connection is answered 503 dependency-unavailable with Retry-After and closed, unread. Keep it under the process's file descriptor limit. 0: no cap."`
	// ClientConnectionShare is the part of MaxConnections one client (an
	// address prefix, ClientPrefixIPv4/IPv6) may hold, so that one address
	// cannot take every connection and lock the others out.
	ClientConnectionShare int `env:"FOODSAFE_CLIENT_CONNECTION_SHARE" envDefault:"10" desc:"Percent of FOODSAFE_MAX_CONNECTIONS one client (an address, an IPv6 /64: FOODSAFE_CLIENT_PREFIX_IPV4 and FOODSAFE_CLIENT_PREFIX_IPV6) may hold open at once (10: 409 of 4096); beyond, its new connection is answered 503 dependency-unavailable with Retry-After and closed, unread, while other clients are served. Connections from FOODSAFE_TRUSTED_PROXIES carry many clients and have no share. 100: no share but the cap."`
	// ReadyTimeout bounds the database probe of /health/ready.
	ReadyTimeout time.Duration `env:"FOODSAFE_READY_TIMEOUT" envDefault:"2s" desc:"Budget of each probe (database, file store) behind /health/ready."`

	// RateLimit is the request budget per key (and per client IP for
	// unauthenticated requests), per minute.
	RateLimit int `env:"FOODSAFE_RATE_LIMIT" envDefault:"300" desc:"Requests per minute per key, and per client IP for unauthenticated or failed-auth requests."`
	// KeyCache keeps authenticated keys in memory, dropped on every key
	// change heard over LISTEN/NOTIFY (docs/operators.md, "Keys and the key cache").
	// Off, every request looks its key up. Needs a session-level
	// connection for the listener (not a transaction-pooling proxy); off
	// by itself on Citus.
	KeyCache bool `env:"FOODSAFE_KEY_CACHE" envDefault:"true" desc:"Keep authenticated keys in memory, dropped on every key change heard over LISTEN/NOTIFY; false looks the key up on every request. Needs a session-level connection to PostgreSQL (not a transaction-pooling proxy); off by itself on Citus."`
	// TrustedProxies are the proxies (a load balancer) whose
	// X-Forwarded-For is believed: the client IP (per-IP budget, audit,
	// logs) is then the last address in it that is not one of them.
	TrustedProxies Prefixes `env:"FOODSAFE_TRUSTED_PROXIES" desc:"Comma-separated CIDRs (or addresses) of the proxies in front of the service, e.g. a load balancer's subnet: a request arriving from one of them is attributed to the address its X-Forwarded-For names (the last one that is not a trusted proxy), for the per-IP budget, the audit trail and the logs. Unset: forwarded headers are ignored and the client IP is the connection's peer."`
	// ClientPrefixIPv4 and ClientPrefixIPv6 are the prefix lengths that
	// make one client (internal/clientip): an IPv6 subscriber holds a whole
	// /64 and may use a new address of it for every request.
	ClientPrefixIPv4 int `env:"FOODSAFE_CLIENT_PREFIX_IPV4" envDefault:"32" desc:"Prefix length that makes one IPv4 client (8 to 32): addresses in one such prefix share one per-IP budget, one connection share and their audit_counts rows. 32: each address is a client."`
	ClientPrefixIPv6 int `env:"FOODSAFE_CLIENT_PREFIX_IPV6" envDefault:"64" desc:"Prefix length that makes one IPv6 client (16 to 128): addresses in one such prefix share one per-IP budget, one connection share and their audit_counts rows. 64: a subscriber's /64, whose addresses it may change at will; 56 or 48 where providers hand out those."`
	// RedisURL, when set, shares rate-limit budgets between processes.
	RedisURL string `env:"REDIS_URL" desc:"e.g. redis://127.0.0.1:6379/0; when set, all server processes share rate-limit budgets through Redis. Unset, each process counts its own."`
	// RedisPrefix namespaces the limiter's Redis keys.
	RedisPrefix string `env:"FOODSAFE_REDIS_PREFIX" envDefault:"foodsafe:ratelimit" desc:"Namespace of the rate limiter's Redis keys (separate deployments sharing a Redis)."`

	// MaxBodyBytes caps JSON request bodies (413 beyond).
	MaxBodyBytes int64 `env:"FOODSAFE_MAX_BODY_BYTES" envDefault:"1048576" desc:"Largest JSON request body; larger ones get 413 payload-too-large."`
	// MaxBatchBytes caps a batch ingest's body (413 beyond): a shift's
	// queue of 500 snapshots is about 150 KB; each snapshot in it is
	// still held to MaxBodyBytes.
	MaxBatchBytes int64 `env:"FOODSAFE_MAX_BATCH_BYTES" envDefault:"4194304" desc:"Largest body of a batch ingest (POST /v1/ingest/restaurants/{restaurantId}/batch, at most 500 items); larger ones get 413 payload-too-large. Each item is also held to FOODSAFE_MAX_BODY_BYTES, as its single PUT would be. Must be at least FOODSAFE_MAX_BODY_BYTES."`
	// MaxPageBytes bounds a page of records or deliveries by the bytes of
	// what it carries, as wire.MaxLimit bounds it by count: a record may be
	// as large as a request body, so 100 of them are 100 MiB, held while
	// the page is built and written.
	MaxPageBytes int64 `env:"FOODSAFE_MAX_PAGE_BYTES" envDefault:"4194304" desc:"Bytes of records (or deliveries) after which a page ends, whatever its limit: the page ends with the record that reaches this size, so it never carries more than this plus one record, and its nextCursor continues after it (limit is a maximum). Bounds what one walk page, delivery page or MCP walk_records / list_deliveries answer holds in memory. At least 65536."`
	// CursorKey seals (encrypts and authenticates) pagination cursors; all
	// processes must share it.
	// Generated per process (with a warning) when empty.
	CursorKey string `env:"FOODSAFE_CURSOR_KEY" desc:"Key (at least 32 characters) from which the keys encrypting and authenticating pagination cursors are derived: the cursors and the changesCursors partners keep for months; set the same value on every server. Unset, a random key per process (with a warning): cursors break across processes and restarts. Changing it sends every partner back to a full walk."`
	// CursorTTL is how long a collection-walk cursor stays valid.
	CursorTTL time.Duration `env:"FOODSAFE_CURSOR_TTL" envDefault:"24h" desc:"Lifetime of a collection walk, counted from its first page: every nextCursor of the walk stops working then (delivery cursors and changesCursors do not expire). Must be positive."`

	// BlobURL selects the file store: empty keeps files on the local disk
	// (BlobDir); s3://bucket/prefix?endpoint=...&region=...&path_style=true
	// keeps them in an S3-compatible bucket, with credentials from the AWS
	// environment (never in the URL), so servers hold no state.
	BlobURL string `env:"FOODSAFE_BLOB_URL" desc:"Where uploaded files are kept. Unset: on the local disk (FOODSAFE_BLOB_DIR). s3://bucket[/prefix][?endpoint=URL&region=NAME&path_style=true]: in an S3-compatible bucket, with presigned download URLs; credentials come from the AWS SDK's default chain, never from the URL."`
	// BlobDir is where the filesystem blob store keeps uploaded files.
	BlobDir string `env:"FOODSAFE_BLOB_DIR" envDefault:".data/blobs" desc:"Filesystem store only: where uploaded files are kept, content-addressed by SHA-256; use an absolute path in production."`
	// URLKey signs the filesystem store's download URLs; all processes
	// must share it. Generated per process (with a warning) when empty.
	URLKey string `env:"FOODSAFE_URL_KEY" desc:"Filesystem store only: key (at least 32 characters) signing /v1/files download URLs; set the same value on every server. Unset, a random key per process (with a warning)."`
	// MaxAssetBytes caps one uploaded file (413 beyond).
	MaxAssetBytes int64 `env:"FOODSAFE_MAX_ASSET_BYTES" envDefault:"52428800" desc:"Largest uploaded file; larger ones get 413 payload-too-large."`
	// UploadTimeout is the read deadline of a file upload and the write
	// deadline of a download, which may take longer than a JSON exchange.
	UploadTimeout time.Duration `env:"FOODSAFE_UPLOAD_TIMEOUT" envDefault:"10m" desc:"Read deadline of a file upload and write deadline of a download (they outlast a JSON exchange)."`
	// UploadIdleTimeout cuts an upload whose client sent nothing for this
	// long (408, nothing stored), so a stalled client gives back its
	// connection, buffer and upload slot long before UploadTimeout.
	UploadIdleTimeout time.Duration `env:"FOODSAFE_UPLOAD_IDLE_TIMEOUT" envDefault:"30s" desc:"An upload that sends no bytes for this long is cut (408 upload-too-slow, nothing stored), freeing its slot long before FOODSAFE_UPLOAD_TIMEOUT."`
	// UploadMinRate and UploadRateGrace cut an upload that trickles (as
	// Apache's mod_reqtimeout body=20,MinRate=...): by any instant, an
	// upload must have sent UploadMinRate bytes for every second past
	// UploadRateGrace. One byte every 20 s resets the idle timer for ever;
	// it does not keep up with a rate. 1 KiB/s is below the slowest
	// mobile network that uploads a photograph (GPRS sends several KB/s),
	// and the 10-minute FOODSAFE_UPLOAD_TIMEOUT already asks 87 KB/s of a
	// 50 MiB file, so only a client that means to hold a slot meets it.
	UploadMinRate   int64         `env:"FOODSAFE_UPLOAD_MIN_RATE" envDefault:"1024" desc:"Bytes a second an upload must average after FOODSAFE_UPLOAD_RATE_GRACE (as Apache's mod_reqtimeout MinRate): an upload that has sent fewer than this many bytes for each second past the grace is cut (408 upload-too-slow, nothing stored, connection closed), freeing its slot to uploads that move. 0: no minimum rate, only FOODSAFE_UPLOAD_IDLE_TIMEOUT."`
	UploadRateGrace time.Duration `env:"FOODSAFE_UPLOAD_RATE_GRACE" envDefault:"20s" desc:"Time an upload may take before FOODSAFE_UPLOAD_MIN_RATE applies (mod_reqtimeout's body=20): the deadline of its next byte is the grace plus one second for every FOODSAFE_UPLOAD_MIN_RATE bytes received."`
	// UploadsPerKey caps the uploads one key has in progress at once (429
	// with Retry-After beyond); UploadsMax caps those of the whole process
	// (503 with Retry-After beyond).
	UploadsPerKey int `env:"FOODSAFE_UPLOADS_PER_KEY" envDefault:"4" desc:"Uploads one key may have in progress at once; beyond, 429 rate-limit-exceeded with Retry-After."`
	UploadsMax    int `env:"FOODSAFE_UPLOADS_MAX" envDefault:"32" desc:"Uploads one process receives at once; beyond, 503 dependency-unavailable with Retry-After."`
	// UploadsReserved keeps the last slots of UploadsMax for keys with no
	// upload in progress, so that a few keys cannot hold every slot: a
	// device starting its first upload gets one unless as many other
	// keys each hold one too. A fixed per-key share would also do it, but
	// would hold back a device sending a backlog on an idle server.
	UploadsReserved int `env:"FOODSAFE_UPLOADS_RESERVED" envDefault:"25" desc:"Percent of FOODSAFE_UPLOADS_MAX (rounded down; 25: 8 of 32) kept for keys with no upload in progress: a key already uploading may take another slot only while more than these are free, else 429 rate-limit-exceeded with Retry-After. A few keys then cannot hold every slot. 0: no reserve."`
	// UploadQuotaBytes caps the bytes one key attaches to files of one
	// restaurant in a UTC day.
	UploadQuotaBytes int64 `env:"FOODSAFE_UPLOAD_QUOTA_BYTES" envDefault:"2147483648" desc:"Bytes of files one key may attach in one restaurant per UTC day (uploads of assets and delivery images; a replay of the same bytes for the same file counts nothing); beyond, 429 upload-quota-exceeded with Retry-After until the day turns. Default 2 GiB: twice a busy restaurant's day (docs/operators.md). 0: no quota."`
	// UploadResumeLifetime is how long a resumable upload may take from
	// its creation to its completion; after it the upload resource is
	// gone and the maintenance job deletes its bytes.
	UploadResumeLifetime time.Duration `env:"FOODSAFE_UPLOAD_RESUME_LIFETIME" envDefault:"24h" desc:"Lifetime of a resumable upload (Upload-Draft-Interop-Version 6) from its creation: Upload-Limit max-age says what is left of it. After it HEAD, PATCH and DELETE answer 404 and the maintenance job (upload-expiry) deletes its partial bytes. A day: a device that lost its network on the evening shift resumes in the morning."`
	// MaxClockSkew is how far ahead of the server's clock a device's
	// capturedAt (a delivery's occurredAt) may be; beyond it the write is
	// refused, within it receivedAt is raised to capturedAt.
	MaxClockSkew time.Duration `env:"FOODSAFE_MAX_CLOCK_SKEW" envDefault:"5m" desc:"How far ahead of the server's clock a device's capturedAt (a delivery's occurredAt) may be: beyond, the write is a 400; within, receivedAt is raised to capturedAt."`
	// SessionTTL is the lifetime of a mobile session token.
	SessionTTL time.Duration `env:"FOODSAFE_SESSION_TTL" envDefault:"1h" desc:"Lifetime of a mobile session token (never beyond its key's expiry)."`

	// CompactAfter is how long a superseded version keeps its data: after
	// it, the maintenance job drops the data and keeps the row (its
	// mutation id answers replays forever). Longer than CursorTTL, since
	// a walk reads versions superseded since its first page; 0 never
	// compacts.
	CompactAfter Days `env:"FOODSAFE_COMPACT_AFTER" envDefault:"25h" desc:"How long a superseded version of a record keeps its data; then maintenance drops the data and keeps the row, so its mutationId still answers replays. Longer than FOODSAFE_CURSOR_TTL (start-up refuses otherwise); 0 never compacts. Whole days (7d) or a Go duration."`
	// AuditRetention is how long audit events are kept, a day partition
	// at a time; 0 keeps them all.
	AuditRetention Days `env:"FOODSAFE_AUDIT_RETENTION" envDefault:"400d" desc:"How long audit events are kept; day partitions holding only older events are dropped whole. 0 keeps everything. Whole days (400d) or a Go duration."`
	// BlobGrace is how long stored bytes are kept after their latest
	// upload and after the last asset naming them died (record deleted,
	// or naming another file); then the collector deletes them. Longer
	// than UploadTimeout; 0 never deletes.
	BlobGrace Days `env:"FOODSAFE_BLOB_GRACE" envDefault:"7d" desc:"How long stored file bytes are kept after their last upload and after the last asset naming them died; then they are deleted (delivery images are kept forever). Longer than FOODSAFE_UPLOAD_TIMEOUT; 0 never deletes. Whole days (7d) or a Go duration."`
	// MaintenanceInterval is how often `foodsafe serve` runs the
	// maintenance jobs (one replica at a time); 0 runs none, for
	// operators who run `foodsafe maintain` from cron instead.
	MaintenanceInterval time.Duration `env:"FOODSAFE_MAINTENANCE_INTERVAL" envDefault:"10m" desc:"How often serve runs the maintenance jobs (compaction, audit partitions, file collection; one replica at a time). 0 runs none, for operators who run foodsafe maintain --once from cron."`

	// AuditFlushInterval is the longest an audit event waits in memory.
	AuditFlushInterval time.Duration `env:"FOODSAFE_AUDIT_FLUSH_INTERVAL" envDefault:"1s" desc:"Longest time an audit event waits in memory before it is written."`
	// AuditBatchSize flushes early once this many events are queued.
	AuditBatchSize int `env:"FOODSAFE_AUDIT_BATCH_SIZE" envDefault:"500" desc:"Audit events written per COPY."`
	// AuditCountRows bounds the audit_counts rows one server adds per
	// minute, however many clients it heard from.
	AuditCountRows int `env:"FOODSAFE_AUDIT_COUNT_ROWS" envDefault:"100" desc:"audit_counts rows one server adds per minute, at most (2 or more): the shapes of that minute written first, heaviest first at each flush, keep their client, route and outcome by name; the rest of the minute's requests are counted together in one row (client ::/0, route (others)). Requests are never dropped for it."`
	// AuditBufferSize bounds queued events; beyond it events are dropped
	// (and the drop is logged) instead of blocking requests.
	AuditBufferSize int `env:"FOODSAFE_AUDIT_BUFFER_SIZE" envDefault:"10000" desc:"Audit events held in memory at most; beyond it new events are dropped and the drop is logged."`
}

// DefaultMetricsAddr keeps the operator listener on loopback: exposing it
// (pprof included) is a deliberate decision of the operator. Its port is
// the one Go's net/http/pprof documentation uses, outside the ports of the
// tools that run beside a service: not Prometheus (9090), the
// Pushgateway (9091), Alertmanager (9093), node_exporter (9100) or the
// rest of the 9100-9999 range Prometheus allocates to exporters, not
// Grafana (3000), Loki (3100) or an OpenTelemetry collector (4317, 4318,
// 8888). On 9090 a host running Prometheus refused to start the service.
const DefaultMetricsAddr = "127.0.0.1:6060"

// Load reads the environment.
func Load() (Config, error) {
	return LoadFrom(env.ToMap(os.Environ()))
}

// LoadFrom reads the given environment (name -> value) instead of the
// process's: the configuration reference reads the defaults through it, so
// a default set in code (not in envDefault) is documented too.
func LoadFrom(environ map[string]string) (Config, error) {
	var c Config
	if err := env.ParseWithOptions(&c, env.Options{Environment: environ}); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	if _, set := environ["FOODSAFE_METRICS_ADDR"]; !set {
		c.MetricsAddr = DefaultMetricsAddr
	}
	if err := c.ClientPrefixes().Check(); err != nil {
		return Config{}, fmt.Errorf("configuration: FOODSAFE_CLIENT_PREFIX_IPV4, FOODSAFE_CLIENT_PREFIX_IPV6: %w", err)
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// check refuses combinations that would lose data a client relies on.
func (c Config) check() error {
	switch {
	case c.CursorTTL <= 0:
		return errors.New("FOODSAFE_CURSOR_TTL must be positive: walk cursors cannot be valid forever, or superseded versions could never be compacted")
	case c.MaxBatchBytes < c.MaxBodyBytes:
		return fmt.Errorf("FOODSAFE_MAX_BATCH_BYTES (%d) must be at least FOODSAFE_MAX_BODY_BYTES (%d): a batch of one item is a snapshot its single PUT takes", c.MaxBatchBytes, c.MaxBodyBytes)
	case c.MaxPageBytes < 64<<10:
		return errors.New("FOODSAFE_MAX_PAGE_BYTES must be at least 65536: a page of small records should not end early")
	case c.MaxConnections < 0:
		return errors.New("FOODSAFE_MAX_CONNECTIONS cannot be negative")
	case c.ClientConnectionShare < 1 || c.ClientConnectionShare > 100:
		return errors.New("FOODSAFE_CLIENT_CONNECTION_SHARE is a percent: 1 to 100")
	case c.AuditCountRows < 2:
		return errors.New("FOODSAFE_AUDIT_COUNT_ROWS must be at least 2: one named shape and the row of the rest")
	case c.CompactAfter < 0, c.AuditRetention < 0, c.BlobGrace < 0, c.MaintenanceInterval < 0:
		return errors.New("FOODSAFE_COMPACT_AFTER, FOODSAFE_AUDIT_RETENTION, FOODSAFE_BLOB_GRACE and FOODSAFE_MAINTENANCE_INTERVAL cannot be negative")
	case c.BlobGrace != 0 && time.Duration(c.BlobGrace) <= c.UploadTimeout:
		return fmt.Errorf("FOODSAFE_BLOB_GRACE (%s) must be longer than FOODSAFE_UPLOAD_TIMEOUT (%s), or 0: bytes being uploaded are not referenced yet",
			c.BlobGrace, c.UploadTimeout)
	case c.CompactAfter != 0 && time.Duration(c.CompactAfter) <= c.CursorTTL:
		return fmt.Errorf("FOODSAFE_COMPACT_AFTER (%s) must be longer than FOODSAFE_CURSOR_TTL (%s), or 0: a walk reads versions superseded since its first page, for as long as its cursors live",
			time.Duration(c.CompactAfter), c.CursorTTL)
	}
	return c.checkUploads()
}

// checkUploads refuses upload settings that would cut every upload or
// make no sense.
func (c Config) checkUploads() error {
	switch {
	case c.UploadIdleTimeout <= 0 || c.UploadIdleTimeout > c.UploadTimeout:
		return fmt.Errorf("FOODSAFE_UPLOAD_IDLE_TIMEOUT (%s) must be positive and at most FOODSAFE_UPLOAD_TIMEOUT (%s)", c.UploadIdleTimeout, c.UploadTimeout)
	case c.UploadsPerKey < 1 || c.UploadsMax < 1:
		return errors.New("FOODSAFE_UPLOADS_PER_KEY and FOODSAFE_UPLOADS_MAX must be at least 1")
	case c.UploadsReserved < 0 || c.UploadsReserved > 99:
		return errors.New("FOODSAFE_UPLOADS_RESERVED is a percent: 0 to 99")
	case c.UploadResumeLifetime <= 0:
		return errors.New("FOODSAFE_UPLOAD_RESUME_LIFETIME must be positive")
	case c.UploadMinRate < 0 || c.UploadRateGrace < 0 || c.UploadQuotaBytes < 0:
		return errors.New("FOODSAFE_UPLOAD_MIN_RATE, FOODSAFE_UPLOAD_RATE_GRACE and FOODSAFE_UPLOAD_QUOTA_BYTES cannot be negative")
	case c.UploadMinRate > 0 && c.UploadRateGrace < 100*time.Millisecond:
		return fmt.Errorf("FOODSAFE_UPLOAD_RATE_GRACE (%s) must be at least 100ms while FOODSAFE_UPLOAD_MIN_RATE is set: without a grace, every upload is cut before its first bytes arrive",
			c.UploadRateGrace)
	}
	return nil
}

// ClientPrefixes are the prefix lengths that make one client.
func (c Config) ClientPrefixes() clientip.Prefixes {
	return clientip.Prefixes{IPv4: c.ClientPrefixIPv4, IPv6: c.ClientPrefixIPv6}
}

// Days is a duration that may also be written in whole days ("400d"),
// for settings measured in days; Go durations ("36h", "90m") and "0" work
// as well.
type Days time.Duration

// UnmarshalText parses "<n>d" or a Go duration.
func (d *Days) UnmarshalText(b []byte) error {
	s := string(b)
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseUint(n, 10, 16)
		if err != nil {
			return fmt.Errorf("%q: want whole days like 400d, or a duration like 36h", s)
		}
		*d = Days(time.Duration(days) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q: want whole days like 400d, or a duration like 36h", s)
	}
	*d = Days(v)
	return nil
}

// String writes whole days as "<n>d".
func (d Days) String() string {
	v := time.Duration(d)
	if v != 0 && v%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(v/(24*time.Hour)), 10) + "d"
	}
	return v.String()
}

// Prefixes is a comma-separated list of CIDRs; a bare address stands for
// itself alone (/32, /128).
type Prefixes []netip.Prefix

// UnmarshalText parses "10.0.0.0/8, 192.0.2.7".
func (p *Prefixes) UnmarshalText(b []byte) error {
	var out Prefixes
	for _, f := range strings.Split(string(b), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if pre, err := netip.ParsePrefix(f); err == nil {
			out = append(out, pre.Masked())
			continue
		}
		addr, err := netip.ParseAddr(f)
		if err != nil {
			return fmt.Errorf("%q: want a CIDR like 10.0.0.0/8 or an address", f)
		}
		out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
	}
	*p = out
	return nil
}

// String writes the list as it is read.
func (p Prefixes) String() string {
	s := make([]string, len(p))
	for i, pre := range p {
		s[i] = pre.String()
	}
	return strings.Join(s, ",")
}
