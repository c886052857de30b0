package httpapi

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/ratelimit"
)

// A batch refused for its cost says whether its cost was counted: not
// when it was over the budget left (the budget left is told), but when
// another request spent the budget while it was counted and it overdrew
// it (the budget left then reads 0, which the detail does not pretend
// was the reason).
func TestRefuseBatchTellsWhatWasCounted(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := &API{log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	refuse := func(res ratelimit.Result) string {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		c.Request = httptest.NewRequest("POST", "/", nil)
		a.refuseBatch(c, res, 500, 20)
		require.Equal(t, 429, w.Code)
		return w.Body.String()
	}
	body := refuse(ratelimit.Result{Limit: 60, Remaining: 7, Reset: now.Add(30 * time.Second), Reached: true})
	require.Contains(t, body, "and 7 are left (this request counted one)")
	body = refuse(ratelimit.Result{Limit: 60, Remaining: 0, Reset: now.Add(30 * time.Second), Reached: true, Counted: true})
	require.NotContains(t, body, "are left")
	require.Contains(t, body, "its cost, counted, overdrew it")
	require.Contains(t, body, "Nothing was applied")
}
