package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// The parallel arrays of a grant query fold into one grant per restaurant,
// in the query's order; no grants is no grants.
func TestZipGrants(t *testing.T) {
	require.Nil(t, zipGrants(nil, nil))
	require.Equal(t, []auth.Grant{
		{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write"}},
		{RestaurantID: "r2", Scopes: []string{"users:read"}},
	}, zipGrants([]string{"r1", "r1", "r2"}, []string{"areas:read", "areas:write", "users:read"}))
}
