package httpapi

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A file stored is counted against the day's quota even when its client
// is gone by then: the count does not run on the request's context, which
// the server cancels when the client closes.
func TestCountUploadOutlivesItsClient(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), testdb.URL(t))
	require.NoError(t, err)
	t.Cleanup(st.Close)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := &API{cfg: config.Config{UploadQuotaBytes: 1 << 30}, store: st, log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	c.Request = httptest.NewRequestWithContext(gone, "PUT", "/", nil)
	principalKey.set(c, &auth.Principal{KeyID: 7})
	a.countUpload(c, "r1", 1234)
	used, err := st.UploadQuotaUsed(context.Background(), "r1", 7, now)
	require.NoError(t, err)
	require.Equal(t, int64(1234), used, "the file stored is counted")
}
