package auth

import (
	"fmt"
	"strings"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
)

// ParseGrantSpec reads the admin CLI's `RESTAURANT=SCOPE[,SCOPE...]`.
// Every scope must be a catalog scope.
func ParseGrantSpec(spec string) (Grant, error) {
	r, list, ok := strings.Cut(spec, "=")
	if !ok || list == "" {
		return Grant{}, fmt.Errorf("grant %q: want RESTAURANT=SCOPE[,SCOPE...]", spec)
	}
	if !ids.Valid(r) {
		return Grant{}, fmt.Errorf("grant %q: %q is not a valid restaurant id", spec, r)
	}
	scopes, err := ParseScopes(list)
	if err != nil {
		return Grant{}, fmt.Errorf("grant %q: %w", spec, err)
	}
	return Grant{RestaurantID: r, Scopes: scopes}, nil
}

// ParseScopes reads a comma-separated list of catalog scopes.
func ParseScopes(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !catalog.ValidScope(s) {
			return nil, fmt.Errorf("unknown scope %q (see `foodsafe keys scopes`)", s)
		}
		out = append(out, s)
	}
	return out, nil
}
