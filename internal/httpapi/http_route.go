package httpapi

import "github.com/foodsafe/foodsafe/internal/openapi"

// access says who may call a route and how it is rate limited.
type access int

// route is one entry of the route table: the single list that registers
// the handlers and generates the OpenAPI document.
type route struct {
	Method string
	Path   string
	Access access
	// Need, for routes under /v1/restaurants/:restaurantId (and the ingest
	// paths), names the scopes the request needs on that restaurant.
	Need *need
	// Handler serves the route; or Op, a read both faces offer (req_request.go),
	// which the route serves as its JSON body.
	Handler handler
	Op      operation
	// Doc documents the route; method, path, security, rate limit and the
	// failures implied by the fields above are filled in by op().
	Doc openapi.Op
	// Raw marks a route whose answer is stored bytes (a file download,
	// ranges included): never compressed (http_compress.go).
	Raw bool
}

const (
	// accessHealth: no authentication, never rate limited.
	accessHealth access = iota
	// accessOpen: no authentication, limited per client IP.
	accessOpen
	// accessDocs: no authentication, not rate limited: the documentation
	// (page, its assets, the OpenAPI document, the problem type pages),
	// served from memory. A
	// developer reading the docs during a rate-limit test must not spend
	// the budget of the address the test runs from (one page load is
	// about seven requests).
	accessDocs
	// accessPartner: bearer key (or session token), limited per key.
	accessPartner
)
