package tests

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store"
)

// An item of a batch whose client hangs up while it is written is counted
// as a single PUT's is, rejected for client-closed-request, not as an
// internal error: the item waits on its stream's lock, held here, the
// client goes, and the write fails with the request.
func TestBatchClientGoneIsCountedClientClosed(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	ctx := context.Background()
	enabled := time.UnixMilli(1_650_000_000_000)
	_, err := a.store().RestaurantAdd(ctx, "r1", store.RestaurantChange{EnabledAt: &enabled})
	require.NoError(t, err)
	key := a.newKey(grant("r1", "temperature-readings:write", "temperature-readings:read"))
	a.put(key, "r1", "temperature-readings", "t-0", "m-0", reading("r1", "t-0", "m-0", 1)["data"])

	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM collection_streams WHERE restaurant_id = 'r1' AND collection = 'temperature-readings' FOR UPDATE`)
	require.NoError(t, err)

	body := mustJSON(t, map[string]any{"items": []any{
		snapshotItem("temperature-readings", reading("r1", "t-1", "m-1", 2)),
		snapshotItem("temperature-readings", reading("r1", "t-2", "m-2", 3)),
	}})
	reqCtx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	hr, err := http.NewRequestWithContext(reqCtx, http.MethodPost, a.srv.URL+batchPath("r1"), strings.NewReader(string(body)))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+key)
	hr.Header.Set("Content-Type", "application/json")
	sent := make(chan error, 1)
	go func() {
		res, err := a.srv.Client().Do(hr)
		if err == nil {
			res.Body.Close()
		}
		sent <- err
	}()
	// The first item waits on the lock.
	waiting := func() bool {
		var n int
		require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n > 0
	}
	for deadline := time.Now().Add(30 * time.Second); !waiting(); {
		require.True(t, time.Now().Before(deadline), "the batch never waited on the stream's lock")
		time.Sleep(20 * time.Millisecond)
	}
	hangUp()
	require.True(t, errors.Is(<-sent, context.Canceled))
	rejected := func() (closed, internal float64) {
		f := a.scrape()
		return f.value("foodsafe_ingest_rejections_total", "reason", "client-closed-request"),
			f.value("foodsafe_ingest_rejections_total", "reason", "internal-error")
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		closed, internal := rejected()
		require.Zero(t, internal, "no item is counted as an internal error")
		if closed > 0 {
			require.Equal(t, 1.0, closed, "the item written when the client went")
			break
		}
		require.True(t, time.Now().Before(deadline), "the item was never counted")
		time.Sleep(20 * time.Millisecond)
	}
}
