package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/wire"
)

func restaurantList(n int) wire.RestaurantList {
	scopes := []string{"areas:read", "cleaning-task-pictures:read", "cooling:read", "deliveries:read", "users:read"}
	l := wire.RestaurantList{Data: make([]wire.RestaurantGrant, n)}
	for i := range l.Data {
		l.Data[i] = wire.RestaurantGrant{RestaurantID: fmt.Sprintf("r%05d", i), Scopes: scopes}
	}
	return l
}

// A large MCP answer holds its size of the process's budget from the tool
// until its request is over; a small one holds nothing; one whose request
// ended while it waited gives back what it took.
func TestLargeAnswersHoldTheirBudget(t *testing.T) {
	a := &API{largeAnswers: newLargeAnswers()}
	ctx := context.Background()

	small := &mcpCall{}
	require.NoError(t, a.holdAnswer(ctx, small, restaurantList(100)))
	require.Zero(t, small.held)

	big := restaurantList(20_000)
	var buf bytes.Buffer
	_, err := big.WriteJSON(&buf, nil)
	require.NoError(t, err)
	size := answerSize(big)
	require.InDelta(t, buf.Len(), size, float64(buf.Len())/10, "the estimate is the answer's size, within 10%")
	require.Greater(t, size, int64(largeAnswer))

	call := &mcpCall{}
	require.NoError(t, a.holdAnswer(ctx, call, big))
	require.Equal(t, size, call.held)
	require.False(t, a.largeAnswers.TryAcquire(largeAnswersInFlight), "held while the answer is written")
	a.releaseAnswer(call)
	require.True(t, a.largeAnswers.TryAcquire(largeAnswersInFlight), "given back when it is")
	a.largeAnswers.Release(largeAnswersInFlight)

	// The budget is full: a second large answer waits, and gives up when
	// its client does.
	require.True(t, a.largeAnswers.TryAcquire(largeAnswersInFlight))
	gone, cancel := context.WithCancel(ctx)
	cancel()
	waiting := &mcpCall{}
	require.ErrorIs(t, a.holdAnswer(gone, waiting, big), context.Canceled)
	require.Zero(t, waiting.held)
	a.largeAnswers.Release(largeAnswersInFlight)

	// A request already over takes nothing.
	over := &mcpCall{}
	a.releaseAnswer(over)
	require.ErrorIs(t, a.holdAnswer(ctx, over, big), errAnswered)
	require.Zero(t, over.held)
	require.True(t, a.largeAnswers.TryAcquire(largeAnswersInFlight))

	// A walk page counts its records' data.
	page := wire.WalkPage{Data: make([]wire.Envelope, 100)}
	for i := range page.Data {
		page.Data[i] = wire.Envelope{Data: json.RawMessage(`"` + string(bytes.Repeat([]byte("x"), 20_000)) + `"`)}
	}
	require.Greater(t, answerSize(page), int64(largeAnswer))
}

// A page of deliveries counts the text its deliveries carry: two of 1 MB
// of reasons make a large answer, which holds its share of the budget.
func TestDeliveryPageAnswerSize(t *testing.T) {
	reasons := make([]string, 100)
	for i := range reasons {
		reasons[i] = strings.Repeat("r", 10_000)
	}
	d := wire.Delivery{NonComplianceReasons: reasons, TemperatureRecords: []wire.TemperatureRecord{{Product: "p", Value: "1"}}}
	size := answerSize(wire.Page[wire.Delivery]{Data: []wire.Delivery{d, d}})
	require.Greater(t, size, int64(2_000_000))
	require.Less(t, size, int64(2_100_000))
	require.Greater(t, size, int64(largeAnswer))
}
