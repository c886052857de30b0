package httpapi

import (
	"context"
	"sync"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// What one MCP request carries into the SDK and back out, read by the
// transport (http_mcp.go), the tools and the budget of large answers.

// mcpCall is what one POST /mcp carries into the SDK and brings back out:
// who is calling, for the tools, and what was called, for the audit trail.
// The SDK handles messages on its own goroutines, hence the lock.
type mcpCall struct {
	principal *auth.Principal
	// groups are the tool groups the principal opens (toolGroupsOf).
	groups    toolGroup
	requestID string
	baseURL   string

	mu         sync.Mutex
	method     string
	tool       string
	restaurant string
	toolError  bool
	// rpcError: the method answered a JSON-RPC error (e.g. unknown tool).
	rpcError bool
	panicked bool
	// held is what the answer holds of the budget of large answers
	// (http_mcp_answers.go), given back once it is written (answered).
	held     int64
	answered bool
}

type mcpCallKey struct{}

func callFrom(ctx context.Context) *mcpCall {
	c, _ := ctx.Value(mcpCallKey{}).(*mcpCall)
	return c
}

// outcome is the audit row's outcome of an MCP request: the JSON-RPC
// method, the tool name for tools/call, and whether the tool failed.
func (c *mcpCall) outcome() (outcome, restaurant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.method
	if c.tool != "" {
		o += " " + c.tool
	}
	switch {
	case c.panicked:
		o += " (panic)"
	case c.toolError:
		o += " (tool error)"
	case c.rpcError:
		o += " (protocol error)"
	}
	return storableText(o, 200), c.restaurant
}

// names are the JSON-RPC method the request called and, for tools/call,
// the tool.
func (c *mcpCall) names() (method, tool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.method, c.tool
}

// emptyCaveat is spec 1's warning, repeated wherever a model reads a list.
const emptyCaveat = "An empty result or a missing record does not prove that nothing happened: only records captured " +
	"after the restaurant was enabled are held, and a device may not have uploaded yet; a count is not a compliance figure."

// logPanic is the one ERROR line of a panic on the SDK's goroutines (the
// answer is a JSON-RPC error or a tool error, so the access line is an
// INFO), and marks the call for the audit trail.
func (a *API) logPanic(ctx context.Context, call *mcpCall, method string, rec any) {
	reqID := ""
	if call != nil {
		reqID = call.requestID
		call.mu.Lock()
		call.panicked = true
		call.mu.Unlock()
	}
	a.logFailure(ctx, reqID, mcpPath+" "+method, recovered(rec))
}

// mcpPath is the route of the MCP endpoint.
const mcpPath = "/mcp"

// toolGroup is a set of tools a key may use somewhere; tools/list shows a
// key only the groups its grants open.
type toolGroup uint

const (
	// groupRecords: some <collection>:read on some restaurant.
	groupRecords toolGroup = 1 << iota
	// groupFiles: the read scope of a collection that carries files.
	groupFiles
	// groupDeliveries: deliveries:read somewhere.
	groupDeliveries
	// groupImages: deliveries:read and delivery-images:read on one
	// restaurant (the two scopes the images route needs).
	groupImages
)

// toolGroupsOf is the set of groups the principal's grants open, from
// what it holds anywhere (made once per key, auth.Principal.Reach).
func toolGroupsOf(p *auth.Principal) toolGroup {
	var g toolGroup
	r := p.Reach()
	if r.Deliveries {
		g |= groupDeliveries
	}
	if r.DeliveryImages {
		g |= groupImages
	}
	if r.Records {
		g |= groupRecords
	}
	if r.Files {
		g |= groupFiles
	}
	return g
}
