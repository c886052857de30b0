package httpapi

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
)

// limitOpen limits unauthenticated routes per client (an address, an
// IPv6 /64: clientBucket).
func (a *API) limitOpen(c *gin.Context) {
	if a.limitBy(c, metrics.BucketIP, clientBucket(c)) {
		c.Next()
	}
}

// limitBy counts the request against the budget of id in bucket, sets the
// X-RateLimit-* headers and answers 429 when the budget is spent. It
// reports whether to go on.
func (a *API) limitBy(c *gin.Context, bucket metrics.Bucket, id string) bool {
	res := a.limiter.Take(c.Request.Context(), string(bucket)+":"+id)
	if !res.Reached {
		setRateHeaders(c, res, a.now())
		return true
	}
	a.refuseSpent(c, bucket, res)
	return false
}

// spentIP peeks at the client IP's budget before work that a refusal
// would waste (a key lookup): the state of a spent budget, nil while a
// request is left. Nothing is counted.
func (a *API) spentIP(ctx context.Context, c *gin.Context) *ratelimit.Result {
	if res := a.limiter.Spent(ctx, string(metrics.BucketIP)+":"+clientBucket(c)); res.Reached {
		return &res
	}
	return nil
}

// refuseSpent answers 429 for a spent budget, with Retry-After.
func (a *API) refuseSpent(c *gin.Context, bucket metrics.Bucket, res ratelimit.Result) {
	setRateHeaders(c, res, a.now())
	c.Header("Retry-After", strconv.FormatInt(secondsUntil(res.Reset, a.now()), 10))
	auditOutcomeKey.set(c, "rate-limited")
	a.metrics.RateLimited(bucket)
	a.fail(c, apperr.New(apperr.RateLimited, "The request budget of %d requests per minute is spent; retry after the number of seconds in Retry-After.", res.Limit))
}

// refuseBatch answers 429 for a batch whose cost is over the budget left:
// nothing of it was applied, and its cost was not counted unless another
// request spent the budget while it was counted (res.Counted: the detail
// says so). Retry-After is when the budget is whole again, which always
// admits a batch (batchCost).
func (a *API) refuseBatch(c *gin.Context, res ratelimit.Result, items int, cost int64) {
	setRateHeaders(c, res, a.now())
	c.Header("Retry-After", strconv.FormatInt(secondsUntil(res.Reset, a.now()), 10))
	auditOutcomeKey.set(c, "rate-limited")
	a.metrics.RateLimited(metrics.BucketKey)
	if res.Counted {
		a.fail(c, apperr.New(apperr.RateLimited, "A batch of %d items costs %d requests of the budget of %d requests per minute; "+
			"other requests of this key spent the budget while it was counted, and its cost, counted, overdrew it. Nothing was applied. "+
			"Retry after the number of seconds in Retry-After, or send fewer items.", items, cost, res.Limit))
		return
	}
	a.fail(c, apperr.New(apperr.RateLimited, "A batch of %d items costs %d requests of the budget of %d requests per minute, and %d are left (this request counted one); "+
		"nothing was applied. Retry after the number of seconds in Retry-After, or send fewer items.", items, cost, res.Limit, res.Remaining))
}

// setRateHeaders writes the budget. X-RateLimit-Reset is in seconds until
// the window resets (like Retry-After), not a timestamp: the spec keeps
// timestamps as epoch milliseconds, and a delta needs no clock agreement.
func setRateHeaders(c *gin.Context, r ratelimit.Result, now time.Time) {
	h := c.Writer.Header()
	h.Set("X-RateLimit-Limit", strconv.FormatInt(r.Limit, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(r.Remaining, 10))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(secondsUntil(r.Reset, now), 10))
}

// secondsUntil rounds up, at least 1, so a client never retries early.
func secondsUntil(t, now time.Time) int64 {
	return max(1, int64(math.Ceil(t.Sub(now).Seconds())))
}
