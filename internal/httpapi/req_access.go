package httpapi

import (
	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
)

// need is what a route under /restaurants/:restaurantId requires there.
type need struct {
	// check names the scopes a request needs on its restaurant. It may fail
	// with a 400 (e.g. an unknown collection), which is checked after the
	// restaurant grant and before the scopes (spec 4.4 precedence).
	check func(ps params) ([]string, error)
	// names are the same scopes as the documentation writes them.
	names []string
}

// scopes needs fixed scopes (none: any grant on the restaurant).
func scopes(s ...string) *need {
	return &need{check: func(params) ([]string, error) { return s, nil }, names: s}
}

// allow is spec 5.3 for anything under a restaurant, REST route or MCP
// tool alike: no grant for the restaurant is the one 404 (indistinguishable
// from a missing resource), then the need's own 400s, then a missing scope
// is 403.
func allow(p *auth.Principal, ps params, n *need) error {
	r := ps.path("restaurantId")
	if !p.HasRestaurant(r) {
		return apperr.ErrNotFound
	}
	want, err := n.check(ps)
	if err != nil {
		return err
	}
	for _, s := range want {
		if !p.Can(r, s) {
			return apperr.New(apperr.Forbidden, "This key does not hold the scope %s for this restaurant.", s)
		}
	}
	return nil
}
