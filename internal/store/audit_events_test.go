package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store"
)

// AuditRecent's failures pass through the one translator of database
// errors, whichever of its three statements fails: a closed pool is the
// database unavailable (503), not a bare pgx error (500).
func TestAuditRecentTranslatesErrors(t *testing.T) {
	st := openStore(t)
	since := time.Now().Add(-time.Hour)
	filters := map[string]store.AuditFilter{
		"by key":        {KeyPublicID: "abcdefghijkl", Since: since, Limit: 10},
		"by restaurant": {RestaurantID: "r1", Since: since, Limit: 10},
		"all":           {Since: since, Limit: 10},
	}
	for name, f := range filters {
		_, err := st.AuditRecent(context.Background(), f)
		require.NoError(t, err, name)
	}
	st.Close()
	for name, f := range filters {
		_, err := st.AuditRecent(context.Background(), f)
		require.True(t, apperr.Is(err, apperr.DependencyUnavailable), "%s: %v", name, err)
	}
}
