package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/model"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
)

const (
	ctxPrincipal    = "foodsafe.principal"
	ctxAuditOutcome = "foodsafe.auditOutcome"
)

// principal is the authenticated caller; only valid behind authenticate.
func principal(c *gin.Context) *auth.Principal {
	return c.MustGet(ctxPrincipal).(*auth.Principal)
}

// authenticate resolves the bearer credential (spec 5.3) and counts the
// request against the key's budget. Failed authentications count against
// the client IP's budget instead, so guessing is throttled too.
func (a *API) authenticate(c *gin.Context) {
	p, reason, publicID, err := a.resolve(c)
	if err != nil {
		a.fail(c, err)
		return
	}
	if p == nil {
		c.Set(ctxAuditOutcome, string(reason))
		if publicID != "" {
			c.Set(ctxLogKeyID, publicID)
		}
		if !a.limitBy(c, "ip:"+c.ClientIP()) {
			return
		}
		c.Header("WWW-Authenticate", wwwAuthenticate(reason))
		a.fail(c, apperr.New(apperr.Unauthorized, "%s", unauthorizedDetail(reason)))
		return
	}
	c.Set(ctxLogKeyID, p.KeyPublicID)
	c.Set(ctxPrincipal, p)
	if !a.limitBy(c, "key:"+p.KeyPublicID) {
		return
	}
	c.Next()
}

// resolve maps the Authorization header to a principal, or to the reason
// it cannot (with the presented public id when the credential parsed).
func (a *API) resolve(c *gin.Context) (*auth.Principal, auth.Reason, string, error) {
	h := c.GetHeader("Authorization")
	if h == "" {
		return nil, auth.ReasonMissing, "", nil
	}
	raw, ok := auth.BearerCredential(h)
	if !ok {
		return nil, auth.ReasonMalformed, "", nil
	}
	cred, ok := auth.ParseCredential(raw)
	if !ok {
		return nil, auth.ReasonMalformed, "", nil
	}
	unavailable := func(err error) error {
		return apperr.New(apperr.DependencyUnavailable, "Credentials cannot be checked right now.").WithCause(err)
	}
	if cred.Prefix == auth.TokenPrefix {
		s, err := a.store.SessionForAuth(c.Request.Context(), cred.PublicID)
		if err != nil {
			return nil, "", "", unavailable(err)
		}
		if s == nil {
			return nil, auth.ReasonUnknown, "", nil
		}
		p, reason := s.Check(cred, a.now())
		// The audit trail names the key a token acts for.
		return p, reason, s.Key.PublicID, nil
	}
	k, err := a.store.KeyForAuth(c.Request.Context(), cred.PublicID)
	if err != nil {
		return nil, "", "", unavailable(err)
	}
	if k == nil {
		return nil, auth.ReasonUnknown, cred.PublicID, nil
	}
	p, reason := k.Check(cred, a.now())
	return p, reason, cred.PublicID, nil
}

// unauthorizedDetail tells a client how to fix its request without
// confirming whether a given key exists: unknown, revoked, expired and
// grant-less keys read the same.
func unauthorizedDetail(r auth.Reason) string {
	switch r {
	case auth.ReasonMissing:
		return "Send the API key as `Authorization: Bearer <key>`."
	case auth.ReasonMalformed:
		return "The Authorization header is not `Bearer <key>` with a well-formed key."
	default:
		return "The API key is not valid: unknown, revoked, expired, or without any grant."
	}
}

// wwwAuthenticate is the RFC 6750 challenge for a refused credential.
func wwwAuthenticate(r auth.Reason) string {
	if r == auth.ReasonMissing {
		return `Bearer realm="foodsafe"`
	}
	return `Bearer realm="foodsafe", error="invalid_token"`
}

// need is what a route under /restaurants/:restaurantId requires there.
type need struct {
	// check names the scopes a request needs on its restaurant. It may fail
	// with a 400 (e.g. an unknown collection), which is checked after the
	// restaurant grant and before the scopes (spec 4.4 precedence).
	check func(c *gin.Context) ([]string, error)
	// names are the same scopes as the documentation writes them.
	names []string
}

// scopes needs fixed scopes (none: any grant on the restaurant).
func scopes(s ...string) *need {
	return &need{check: func(*gin.Context) ([]string, error) { return s, nil }, names: s}
}

// authorize enforces spec 5.3 for routes under /restaurants/:restaurantId:
// no grant for the restaurant is the one 404 (indistinguishable from a
// missing resource), then the route's own 400s, then a missing scope is 403.
func (a *API) authorize(n *need) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := principal(c)
		r := c.Param("restaurantId")
		if !p.HasRestaurant(r) {
			a.fail(c, apperr.ErrNotFound)
			return
		}
		want, err := n.check(c)
		if err != nil {
			a.fail(c, err)
			return
		}
		for _, s := range want {
			if !p.Can(r, s) {
				a.fail(c, apperr.New(apperr.Forbidden, "This key does not hold the scope %s for this restaurant.", s))
				return
			}
		}
		c.Next()
	}
}

// limitOpen limits unauthenticated routes per client IP.
func (a *API) limitOpen(c *gin.Context) {
	if a.limitBy(c, "ip:"+c.ClientIP()) {
		c.Next()
	}
}

// limitBy counts the request against bucket, sets the X-RateLimit-* headers
// and answers 429 when the budget is spent. It reports whether to go on.
func (a *API) limitBy(c *gin.Context, bucket string) bool {
	res := a.limiter.Take(c.Request.Context(), bucket)
	setRateHeaders(c, res, a.now())
	if !res.Reached {
		return true
	}
	c.Header("Retry-After", strconv.FormatInt(secondsUntil(res.Reset, a.now()), 10))
	c.Set(ctxAuditOutcome, "rate-limited")
	a.fail(c, apperr.New(apperr.RateLimited, "The request budget of %d requests per minute is spent; retry after the number of seconds in Retry-After.", res.Limit))
	return false
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

// restaurantsList is GET /v1/restaurants (spec 4.2): the grants of the key,
// restaurants and scopes sorted. It needs no query: the principal holds them.
func (a *API) restaurantsList(c *gin.Context) {
	c.PureJSON(http.StatusOK, List[model.RestaurantGrant]{Data: restaurantGrants(principal(c).Grants())})
}

func restaurantGrants(grants []auth.Grant) []model.RestaurantGrant {
	out := make([]model.RestaurantGrant, len(grants))
	for i, g := range grants {
		out[i] = model.RestaurantGrant{RestaurantID: g.RestaurantID, Scopes: g.Scopes}
	}
	return out
}

// List is the {"data": [...]} envelope of list responses.
type List[T any] struct {
	Data []T `json:"data"`
}
