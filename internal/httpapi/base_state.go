package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// What the middleware learns about a request travels on its gin context,
// under keys of this file's own type: each value is set and read through
// its key, so its type is checked where it is set and where it is read,
// and no string key (gin's own, a library's) can collide with it. A file
// that alone sets and reads a value declares its key (bodyKey,
// req_body.go); the keys below are read in more than one layer.

// stateKey names one value of type T kept on a request's gin context.
type stateKey[T any] struct{ name string }

func (k stateKey[T]) set(c *gin.Context, v T) { c.Set(k, v) }

// get returns the value, or T's zero value and false when it was not set.
func (k stateKey[T]) get(c *gin.Context) (T, bool) {
	v, ok := c.Get(k)
	t, _ := v.(T)
	return t, ok
}

// value is get without the second result, for values whose zero means
// "not set".
func (k stateKey[T]) value(c *gin.Context) T {
	t, _ := k.get(c)
	return t
}

var (
	// requestIDKey: the request id every answer and log line carries
	// (withRequestID).
	requestIDKey = stateKey[string]{"requestID"}
	// principalKey: the authenticated caller (authenticate).
	principalKey = stateKey[*auth.Principal]{"principal"}
	// logKeyIDKey: the public id of the key presented, for the access log
	// and the audit trail (authenticate).
	logKeyIDKey = stateKey[string]{"logKeyID"}
	// logMCPKey: what an MCP request called (its audit outcome), for the
	// access log.
	logMCPKey = stateKey[string]{"logMCP"}
	// auditOutcomeKey: why a request was refused or what it did, when the
	// status alone does not say it (auditTrail).
	auditOutcomeKey = stateKey[string]{"auditOutcome"}
	// auditRestaurantKey names the restaurant of a request whose path has
	// none (an MCP tool call's restaurantId argument).
	auditRestaurantKey = stateKey[string]{"auditRestaurant"}
	// serverCutKey marks a request the server itself stopped reading (an
	// upload idle past its timeout): its context is cancelled, but the
	// client is still there to read why.
	serverCutKey = stateKey[bool]{"serverCut"}
)

// requestID is the request's id; empty before withRequestID ran.
func requestID(c *gin.Context) string { return requestIDKey.value(c) }

// principal is the authenticated caller; only valid behind authenticate.
func principal(c *gin.Context) *auth.Principal {
	p, ok := principalKey.get(c)
	if !ok {
		panic("httpapi: principal read on a route without authenticate")
	}
	return p
}
