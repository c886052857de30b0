package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// A token's grants go to SessionGrantSetsAdd as their distinct scope sets,
// sorted and joined, each once, with every restaurant naming its set (1-based,
// as SQL arrays): restaurants sharing one list or holding equal lists in
// another order share a set, and a restaurant without scopes carries
// nothing. The lists are the caller's (a principal's, shared): never
// sorted in place.
func TestGrantSets(t *testing.T) {
	shared := []string{"areas:read", "areas:write"}
	unsorted := []string{"areas:write", "areas:read", "areas:write"}
	got := grantSets([]auth.Grant{
		{RestaurantID: "r1", Scopes: shared},
		{RestaurantID: "r2", Scopes: []string{"users:read"}},
		{RestaurantID: "r3", Scopes: shared},
		{RestaurantID: "r4", Scopes: unsorted},
		{RestaurantID: "r5", Scopes: nil},
	})
	require.Equal(t, db.SessionGrantSetsAddParams{
		ScopeSets:     []string{"areas:read,areas:write", "users:read"},
		RestaurantIds: []string{"r1", "r2", "r3", "r4"},
		SetIndexes:    []int32{1, 2, 1, 1},
	}, got)
	require.Equal(t, []string{"areas:write", "areas:read", "areas:write"}, unsorted, "the caller's list is not sorted in place")
}
