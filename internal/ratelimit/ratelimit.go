// Package ratelimit counts requests per bucket (a key, or a client IP) in
// fixed one-minute windows with github.com/ulule/limiter/v3: in memory by
// default, in Redis when configured so several server processes share one
// budget.
//
// When Redis fails (down at start-up, or later), the limiter falls back to
// its in-memory store for that process and retries Redis after a short
// cooldown. Requests keep being served and keep being limited, per process
// instead of shared, rather than failing (a rate limiter must not take the
// API down) or going unlimited (which would let key guessing through).
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

const (
	// redisTimeout bounds one Redis round trip on the request path.
	redisTimeout = 250 * time.Millisecond
	// cooldown is how long a failed Redis is left alone.
	cooldown = 5 * time.Second
)

// Result is the state of a bucket after counting one request.
type Result struct {
	Limit     int64
	Remaining int64
	Reset     time.Time
	Reached   bool
	// Counted (TakeMore): the cost was counted. Reached with it, another
	// request spent the budget between the check and the count, and this
	// one overdrew it.
	Counted bool
}

// Limiter counts requests per bucket.
type Limiter struct {
	rate   limiter.Rate
	local  limiter.Store
	client *redis.Client
	prefix string
	log    *slog.Logger
	m      *metrics.Metrics
	// fallback is set when Redis fails and cleared when it answers again.
	fallback atomic.Bool

	mu        sync.Mutex
	shared    limiter.Store
	downUntil time.Time
}

// New builds a limiter of perMinute requests per bucket per minute. With a
// redisURL the budget is shared through Redis under prefix. m counts
// fallbacks (nil: not counted). instrument, when given and not nil, is
// applied to the Redis client (tracing's hook).
func New(perMinute int, redisURL, prefix string, log *slog.Logger, m *metrics.Metrics, instrument ...func(*redis.Client) error) (*Limiter, error) {
	if perMinute < 1 {
		return nil, fmt.Errorf("FOODSAFE_RATE_LIMIT must be at least 1, got %d", perMinute)
	}
	l := &Limiter{
		rate:   limiter.Rate{Period: time.Minute, Limit: int64(perMinute)},
		local:  memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: prefix, CleanUpInterval: time.Minute}),
		prefix: prefix,
		log:    log,
		m:      m,
	}
	if redisURL != "" {
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		// Fail fast: a slow Redis must not become a slow API.
		opts.DialTimeout = redisTimeout
		opts.ReadTimeout = redisTimeout
		opts.WriteTimeout = redisTimeout
		opts.PoolTimeout = redisTimeout
		opts.MaxRetries = -1 // no retries; the fallback is the retry
		// go-redis logs through a package-level logger writing plain text
		// to stderr; send it through ours so every line stays JSON.
		redis.SetLogger(redisLog{log})
		l.client = redis.NewClient(opts)
		for _, f := range instrument {
			if f == nil {
				continue
			}
			if err := f(l.client); err != nil {
				_ = l.client.Close()
				return nil, fmt.Errorf("REDIS_URL: instrumenting the client: %w", err)
			}
		}
	}
	return l, nil
}

// Close releases the Redis client.
func (l *Limiter) Close() error {
	if l.client != nil {
		return l.client.Close()
	}
	return nil
}

// Take counts one request against bucket and reports the bucket's state.
func (l *Limiter) Take(ctx context.Context, bucket string) Result {
	ctx, sp := span.Start(ctx, "rate limit")
	res := l.take(ctx, bucket)
	l.traced(sp, bucket, res)
	return res
}

func (l *Limiter) take(ctx context.Context, bucket string) Result {
	return l.count(ctx, func(ctx context.Context, st limiter.Store) (limiter.Context, error) {
		return st.Get(ctx, bucket, l.rate)
	}, result)
}

// TakeMore counts n more requests against bucket, for a request whose
// cost is known only once it was admitted and read (a batch of many
// writes): when fewer than n requests are left, none is counted and the
// result is Reached, so the request is refused whole and the budget left
// stays for smaller requests. Two such requests racing may both pass the
// check; the one that then overdraws the budget is refused, its cost
// counted.
func (l *Limiter) TakeMore(ctx context.Context, bucket string, n int64) Result {
	ctx, sp := span.Start(ctx, "rate limit")
	res := l.peek(ctx, bucket)
	if res.Remaining >= n {
		res = l.count(ctx, func(ctx context.Context, st limiter.Store) (limiter.Context, error) {
			return st.Increment(ctx, bucket, n, l.rate)
		}, result)
		res.Counted = true
	} else {
		res.Reached = true
	}
	l.traced(sp, bucket, res)
	return res
}

// Spent reports whether bucket has no request left in its window,
// without counting one: the check before work a refusal would waste
// (a key lookup in the database).
func (l *Limiter) Spent(ctx context.Context, bucket string) Result {
	ctx, sp := span.Start(ctx, "rate limit peek")
	res := l.peek(ctx, bucket)
	l.traced(sp, bucket, res)
	return res
}

func (l *Limiter) peek(ctx context.Context, bucket string) Result {
	return l.count(ctx, func(ctx context.Context, st limiter.Store) (limiter.Context, error) {
		return st.Peek(ctx, bucket, l.rate)
	}, spent)
}

// count runs op against Redis when it is configured and answers, else
// against the memory store (which never fails), and reads its state.
func (l *Limiter) count(ctx context.Context, op func(context.Context, limiter.Store) (limiter.Context, error), read func(limiter.Context, time.Time) Result) Result {
	if st := l.sharedStore(ctx); st != nil {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		c, err := op(rctx, st)
		cancel()
		if err == nil {
			if l.fallback.Load() && l.fallback.CompareAndSwap(true, false) {
				l.log.Info("rate limiter: Redis answers again; budgets are shared")
			}
			return read(c, time.Now().Add(l.rate.Period))
		}
		l.markDown(err)
	}
	c, _ := op(ctx, l.local)
	return read(c, time.Now().Add(l.rate.Period))
}

// traced ends the span of a Take or Spent with what it found: the kind of
// bucket (key or ip, never the id: an address is the client's), the store
// that answered and the budget left.
func (l *Limiter) traced(sp trace.Span, bucket string, r Result) {
	if sp.IsRecording() {
		kind, _, _ := strings.Cut(bucket, ":")
		sp.SetAttributes(attribute.String("foodsafe.ratelimit.bucket", kind), attribute.String("foodsafe.ratelimit.backend", l.Backend()),
			attribute.Int64("foodsafe.ratelimit.remaining", r.Remaining), attribute.Bool("foodsafe.ratelimit.reached", r.Reached))
	}
	sp.End()
}

// spent is a peeked bucket's state, Reached when no request is left.
func spent(c limiter.Context, latest time.Time) Result {
	r := result(c, latest)
	r.Reached = r.Remaining <= 0
	return r
}

// sharedStore returns the Redis store, creating it on first use (its
// constructor needs Redis up), or nil while Redis is unconfigured or
// cooling down after a failure.
func (l *Limiter) sharedStore(ctx context.Context) limiter.Store {
	if l.client == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Now().Before(l.downUntil) {
		return nil
	}
	if l.shared == nil {
		rctx, cancel := context.WithTimeout(ctx, redisTimeout)
		defer cancel()
		if err := l.client.Ping(rctx).Err(); err != nil {
			l.markDownLocked(err)
			return nil
		}
		st, err := sredis.NewStoreWithOptions(l.client, limiter.StoreOptions{Prefix: l.prefix})
		if err != nil {
			l.markDownLocked(err)
			return nil
		}
		l.shared = st
		l.log.Info("rate limiter using Redis")
	}
	return l.shared
}

func (l *Limiter) markDown(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.markDownLocked(err)
}

func (l *Limiter) markDownLocked(err error) {
	if time.Now().Before(l.downUntil) {
		return
	}
	l.downUntil = time.Now().Add(cooldown)
	l.fallback.Store(true)
	l.m.RateLimitFallback()
	l.log.Warn("rate limiter: Redis unavailable; limiting per process in memory",
		"retry_in", cooldown.String(), "error", err)
}

// Backend names the store the limiter counts in now (a metrics.Backend*
// value): memory when no Redis is configured, fallback from a Redis failure
// until Redis answers again, redis otherwise.
func (l *Limiter) Backend() string {
	switch {
	case l.client == nil:
		return metrics.BackendMemory
	case l.fallback.Load():
		return metrics.BackendFallback
	}
	return metrics.BackendRedis
}

// result is a bucket's state. The store gives the window's end truncated
// to the second, up to a second before it really ends: a client told to
// wait that long came back to a budget still spent. Reset is the next
// whole second instead, never later than latest (a window that began no
// later than now ends by now plus its period), so it is never early and
// at most a second late.
func result(c limiter.Context, latest time.Time) Result {
	reset := time.Unix(c.Reset+1, 0)
	if latest.Before(reset) {
		reset = latest
	}
	return Result{Limit: c.Limit, Remaining: c.Remaining, Reset: reset, Reached: c.Reached}
}

// redisLog adapts go-redis's Printf logger to slog.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.log.WarnContext(ctx, "redis client: "+fmt.Sprintf(format, v...), "component", "redis")
}
