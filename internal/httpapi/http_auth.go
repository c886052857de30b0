package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/ratelimit"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// authenticate resolves the bearer credential (spec 5.3) and counts the
// request against the key's budget. Failed authentications count against
// the client IP's budget instead, so guessing is throttled too.
func (a *API) authenticate(c *gin.Context) {
	ctx, sp := span.Start(c.Request.Context(), "authenticate")
	r, err := a.resolve(ctx, c)
	traceAuth(sp, r, err)
	if err != nil {
		a.metrics.Authentication(r.credential, metrics.AuthError)
		a.fail(c, err)
		return
	}
	if r.spent != nil {
		// The client's address has no request left: refused before its
		// credential costs a database round trip.
		a.refuseSpent(c, metrics.BucketIP, *r.spent)
		return
	}
	if r.principal == nil {
		a.metrics.Authentication(r.credential, string(r.reason))
		auditOutcomeKey.set(c, string(r.reason))
		if r.publicID != "" {
			logKeyIDKey.set(c, r.publicID)
		}
		if !a.limitBy(c, metrics.BucketIP, clientBucket(c)) {
			return
		}
		c.Header("WWW-Authenticate", wwwAuthenticate(r.reason))
		a.fail(c, apperr.New(apperr.Unauthorized, "%s", unauthorizedDetail(r.reason)))
		return
	}
	a.metrics.Authentication(r.credential, metrics.AuthOK)
	p := r.principal
	logKeyIDKey.set(c, p.KeyPublicID)
	principalKey.set(c, p)
	if !a.limitBy(c, metrics.BucketKey, p.KeyPublicID) {
		return
	}
	c.Next()
}

// resolution is what the Authorization header resolved to: a principal, or
// the reason there is none (with the public id presented when the
// credential parsed), and the kind of credential it was.
type resolution struct {
	principal  *auth.Principal
	reason     auth.Reason
	publicID   string
	credential metrics.Credential
	// spent is set when the credential was not looked up: it is not in
	// memory, and the client IP's budget is spent.
	spent *ratelimit.Result
	// found says where the credential was found, for its span: "cache"
	// (the key cache), "database" (a lookup), "" (not looked up).
	found string
}

// traceAuth ends the authentication span with what it found: the kind of
// credential, where it was looked up, the public id and the outcome.
func traceAuth(sp trace.Span, r resolution, err error) {
	if sp.IsRecording() {
		sp.SetAttributes(attribute.String("foodsafe.auth.credential", string(r.credential)),
			attribute.String("foodsafe.auth.found_in", r.found))
		switch {
		case r.principal != nil:
			sp.SetAttributes(attrKeyID.String(r.principal.KeyPublicID), attribute.String("foodsafe.auth.outcome", metrics.AuthOK))
		case r.reason != "":
			sp.SetAttributes(attribute.String("foodsafe.auth.outcome", string(r.reason)))
		}
		span.Fail(sp, err)
	}
	sp.End()
}

// resolve maps the Authorization header to a principal, or to the reason
// it cannot; ctx is the request's, under the authentication span.
func (a *API) resolve(ctx context.Context, c *gin.Context) (resolution, error) {
	if len(c.Request.Header.Values("Authorization")) > 1 {
		// Which one would count is a guess a proxy and this service could
		// make differently: refused, like any malformed header.
		return resolution{reason: auth.ReasonMalformed, credential: metrics.CredentialNone}, nil
	}
	h := c.GetHeader("Authorization")
	if h == "" {
		return resolution{reason: auth.ReasonMissing, credential: metrics.CredentialNone}, nil
	}
	raw, ok := auth.BearerCredential(h)
	if !ok {
		return resolution{reason: auth.ReasonMalformed, credential: metrics.CredentialNone}, nil
	}
	cred, ok := auth.ParseCredential(raw)
	if !ok {
		return resolution{reason: auth.ReasonMalformed, credential: metrics.CredentialNone}, nil
	}
	if cred.Prefix == auth.TokenPrefix {
		r := resolution{credential: metrics.CredentialSession}
		if r.spent = a.spentIP(ctx, c); r.spent != nil {
			return r, nil
		}
		r.found = "database"
		s, err := a.store.SessionForAuth(ctx, cred.PublicID)
		if err != nil {
			return r, err
		}
		if s == nil {
			r.reason = auth.ReasonUnknown
			return r, nil
		}
		r.principal, r.reason = s.Check(cred, a.now())
		// The audit trail names the key a token acts for.
		r.publicID = s.Key.PublicID
		return r, nil
	}
	r := resolution{credential: metrics.CredentialKey, publicID: cred.PublicID, found: "cache"}
	if !a.store.KeyInMemory(cred.PublicID) {
		if r.spent = a.spentIP(ctx, c); r.spent != nil {
			return r, nil
		}
		r.found = "database"
	}
	k, err := a.store.KeyForAuth(ctx, cred.PublicID)
	if err != nil {
		return r, err
	}
	if k == nil {
		r.reason = auth.ReasonUnknown
		return r, nil
	}
	r.principal, r.reason = k.Check(cred, a.now())
	return r, nil
}

// unauthorizedDetail tells a client how to fix its request without
// confirming whether a given key exists: unknown, revoked, expired and
// grant-less keys read the same.
func unauthorizedDetail(r auth.Reason) string {
	switch r {
	case auth.ReasonMissing:
		return "Send the API key as `Authorization: Bearer <key>`."
	case auth.ReasonMalformed:
		return "The Authorization header is not one `Bearer <key>` with a well-formed key."
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

// authorize enforces a route's need before its handler runs.
func (a *API) authorize(n *need) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := allow(principal(c), restParams{c}, n); err != nil {
			a.fail(c, err)
			return
		}
		c.Next()
	}
}
