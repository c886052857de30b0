// Package config turns the process environment into a Config. Every variable
// the service reads is declared here, once, with its default; README's
// configuration table mirrors this struct.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// Config is the whole runtime configuration of the foodsafe binary.
type Config struct {
	// DatabaseURL is the PostgreSQL connection string (pgx syntax).
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/foodsafe?sslmode=disable"`
	// Addr is the listen address of `foodsafe serve`.
	Addr string `env:"FOODSAFE_ADDR" envDefault:":8080"`
	// BaseURL prefixes problem `type` URIs and signed URLs; derived from the
	// request (scheme + Host) when empty.
	BaseURL string `env:"FOODSAFE_BASE_URL"`
	// MetricsAddr is the listen address of the operator listener: /metrics
	// and /debug/pprof/, never on the API port. Unset means
	// DefaultMetricsAddr; set to the empty string, it turns metrics off
	// (no listener, no instrumentation). Not an envDefault: the env
	// library would put the default back for an empty value.
	MetricsAddr string `env:"FOODSAFE_METRICS_ADDR"`
	// LogLevel is the minimum slog level: debug, info, warn or error.
	LogLevel slog.Level `env:"FOODSAFE_LOG_LEVEL" envDefault:"info"`

	// ShutdownTimeout bounds how long in-flight requests may run after
	// SIGINT/SIGTERM before the server closes them.
	ShutdownTimeout time.Duration `env:"FOODSAFE_SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// ReadHeaderTimeout limits slow-loris clients.
	ReadHeaderTimeout time.Duration `env:"FOODSAFE_READ_HEADER_TIMEOUT" envDefault:"10s"`
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration `env:"FOODSAFE_READ_TIMEOUT" envDefault:"60s"`
	// WriteTimeout bounds writing a response.
	WriteTimeout time.Duration `env:"FOODSAFE_WRITE_TIMEOUT" envDefault:"60s"`
	// IdleTimeout closes idle keep-alive connections.
	IdleTimeout time.Duration `env:"FOODSAFE_IDLE_TIMEOUT" envDefault:"120s"`
	// ReadyTimeout bounds the database probe of /health/ready.
	ReadyTimeout time.Duration `env:"FOODSAFE_READY_TIMEOUT" envDefault:"2s"`

	// RateLimit is the request budget per key (and per client IP for
	// unauthenticated requests), per minute.
	RateLimit int `env:"FOODSAFE_RATE_LIMIT" envDefault:"300"`
	// KeyCache keeps authenticated keys in memory, dropped on every key
	// change heard over LISTEN/NOTIFY (README, "Keys, scopes and access").
	// Off, every request looks its key up. Needs a session-level
	// connection for the listener (not a transaction-pooling proxy); off
	// by itself on Citus.
	KeyCache bool `env:"FOODSAFE_KEY_CACHE" envDefault:"true"`
	// RedisURL, when set, shares rate-limit budgets between processes.
	RedisURL string `env:"REDIS_URL"`
	// RedisPrefix namespaces the limiter's Redis keys.
	RedisPrefix string `env:"FOODSAFE_REDIS_PREFIX" envDefault:"foodsafe:ratelimit"`

	// MaxBodyBytes caps JSON request bodies (413 beyond).
	MaxBodyBytes int64 `env:"FOODSAFE_MAX_BODY_BYTES" envDefault:"1048576"`
	// CursorKey signs pagination cursors; all processes must share it.
	// Generated per process (with a warning) when empty.
	CursorKey string `env:"FOODSAFE_CURSOR_KEY"`
	// CursorTTL is how long a collection-walk cursor stays valid.
	CursorTTL time.Duration `env:"FOODSAFE_CURSOR_TTL" envDefault:"24h"`

	// BlobURL selects the file store: empty keeps files on the local disk
	// (BlobDir); s3://bucket/prefix?endpoint=...&region=...&path_style=true
	// keeps them in an S3-compatible bucket, with credentials from the AWS
	// environment (never in the URL), so servers hold no state.
	BlobURL string `env:"FOODSAFE_BLOB_URL"`
	// BlobDir is where the filesystem blob store keeps uploaded files.
	BlobDir string `env:"FOODSAFE_BLOB_DIR" envDefault:".data/blobs"`
	// URLKey signs the filesystem store's download URLs; all processes
	// must share it. Generated per process (with a warning) when empty.
	URLKey string `env:"FOODSAFE_URL_KEY"`
	// MaxAssetBytes caps one uploaded file (413 beyond).
	MaxAssetBytes int64 `env:"FOODSAFE_MAX_ASSET_BYTES" envDefault:"52428800"`
	// UploadTimeout is the read deadline of a file upload and the write
	// deadline of a download, which may take longer than a JSON exchange.
	UploadTimeout time.Duration `env:"FOODSAFE_UPLOAD_TIMEOUT" envDefault:"10m"`
	// MaxClockSkew is how far ahead of the server's clock a device's
	// capturedAt (a delivery's occurredAt) may be; beyond it the write is
	// refused, within it receivedAt is raised to capturedAt.
	MaxClockSkew time.Duration `env:"FOODSAFE_MAX_CLOCK_SKEW" envDefault:"5m"`
	// SessionTTL is the lifetime of a mobile session token.
	SessionTTL time.Duration `env:"FOODSAFE_SESSION_TTL" envDefault:"1h"`

	// CompactAfter is how long a superseded version keeps its data: after
	// it, the maintenance job drops the data and keeps the row (its
	// mutation id answers replays forever). Longer than CursorTTL, since
	// a walk reads versions superseded since its first page; 0 never
	// compacts.
	CompactAfter Days `env:"FOODSAFE_COMPACT_AFTER" envDefault:"25h"`
	// AuditRetention is how long audit events are kept, a day partition
	// at a time; 0 keeps them all.
	AuditRetention Days `env:"FOODSAFE_AUDIT_RETENTION" envDefault:"400d"`
	// BlobGrace is how long stored bytes are kept after their latest
	// upload and after the last asset naming them died (record deleted,
	// or naming another file); then the collector deletes them. Longer
	// than UploadTimeout; 0 never deletes.
	BlobGrace Days `env:"FOODSAFE_BLOB_GRACE" envDefault:"7d"`
	// MaintenanceInterval is how often `foodsafe serve` runs the
	// maintenance jobs (one replica at a time); 0 runs none, for
	// operators who run `foodsafe maintain` from cron instead.
	MaintenanceInterval time.Duration `env:"FOODSAFE_MAINTENANCE_INTERVAL" envDefault:"10m"`

	// AuditFlushInterval is the longest an audit event waits in memory.
	AuditFlushInterval time.Duration `env:"FOODSAFE_AUDIT_FLUSH_INTERVAL" envDefault:"1s"`
	// AuditBatchSize flushes early once this many events are queued.
	AuditBatchSize int `env:"FOODSAFE_AUDIT_BATCH_SIZE" envDefault:"500"`
	// AuditBufferSize bounds queued events; beyond it events are dropped
	// (and the drop is logged) instead of blocking requests.
	AuditBufferSize int `env:"FOODSAFE_AUDIT_BUFFER_SIZE" envDefault:"10000"`
}

// DefaultMetricsAddr keeps the operator listener on loopback: exposing it
// (pprof included) is a deliberate decision of the operator.
const DefaultMetricsAddr = "127.0.0.1:9090"

// Load reads the environment.
func Load() (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	if _, set := os.LookupEnv("FOODSAFE_METRICS_ADDR"); !set {
		c.MetricsAddr = DefaultMetricsAddr
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
	case c.CompactAfter < 0, c.AuditRetention < 0, c.BlobGrace < 0, c.MaintenanceInterval < 0:
		return errors.New("FOODSAFE_COMPACT_AFTER, FOODSAFE_AUDIT_RETENTION, FOODSAFE_BLOB_GRACE and FOODSAFE_MAINTENANCE_INTERVAL cannot be negative")
	case c.BlobGrace != 0 && time.Duration(c.BlobGrace) <= c.UploadTimeout:
		return fmt.Errorf("FOODSAFE_BLOB_GRACE (%s) must be longer than FOODSAFE_UPLOAD_TIMEOUT (%s), or 0: bytes being uploaded are not referenced yet",
			c.BlobGrace, c.UploadTimeout)
	case c.CompactAfter != 0 && time.Duration(c.CompactAfter) <= c.CursorTTL:
		return fmt.Errorf("FOODSAFE_COMPACT_AFTER (%s) must be longer than FOODSAFE_CURSOR_TTL (%s), or 0: a walk reads versions superseded since its first page, for as long as its cursors live",
			time.Duration(c.CompactAfter), c.CursorTTL)
	}
	return nil
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
