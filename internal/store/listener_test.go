package store_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// The key listener's proof holds only on the backend that listens: a
// connection whose round trips a transaction-pooling proxy sends to some
// other backend (here: a connection that never listened) is refused, so
// its server does not trust a cache no notification can reach.
func TestListenerProofNeedsTheListeningBackend(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgconn.ParseConfig(testdb.URL(t))
	require.NoError(t, err)
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	require.ErrorIs(t, store.ProveListening(ctx, conn), store.ErrNotListening)
	_, err = conn.Exec(ctx, "LISTEN foodsafe_keys").ReadAll()
	require.NoError(t, err)
	require.NoError(t, store.ProveListening(ctx, conn))
	_, err = conn.Exec(ctx, "UNLISTEN *").ReadAll()
	require.NoError(t, err)
	require.ErrorIs(t, store.ProveListening(ctx, conn), store.ErrNotListening)
}
