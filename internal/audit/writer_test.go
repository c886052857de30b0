package audit

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const key = "fsk_aaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

// sink keeps what was written, failing while fail is set.
type sink struct {
	mu     sync.Mutex
	fail   error
	events []Event
	counts []ShapeCount
}

func (s *sink) record(_ context.Context, e []Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.events = append(s.events, e...)
	return nil
}

func (s *sink) count(_ context.Context, c []ShapeCount) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.counts = append(s.counts, c...)
	return nil
}

func newTestWriter(s *sink, maxShapes int) *Writer {
	return NewWriter(s.record, slog.New(slog.DiscardHandler), Options{FlushInterval: time.Hour, Counts: s.count, MaxShapes: maxShapes})
}

// Every text field of an event or a shape passes through the redactor,
// whoever filled it.
func TestNothingSecretIsWritten(t *testing.T) {
	t.Parallel()
	s := &sink{}
	w := newTestWriter(s, 0)
	w.Record(Event{KeyPublicID: key, RestaurantID: key, Method: key, Route: key, RequestID: key, Outcome: "tools/call " + key})
	w.Count(Shape{Route: key, Outcome: key, KeyPublicID: key, Method: key})
	require.NoError(t, w.Close(context.Background()))
	require.Len(t, s.events, 1)
	require.Len(t, s.counts, 1)
	for _, v := range []string{s.events[0].KeyPublicID, s.events[0].RestaurantID, s.events[0].Method, s.events[0].Route,
		s.events[0].RequestID, s.events[0].Outcome, s.counts[0].Route, s.counts[0].Outcome, s.counts[0].KeyPublicID} {
		require.Contains(t, v, "fsk_aaaaaaaaaaaaaaaa.[redacted]")
	}
	require.Equal(t, "other", s.counts[0].Method)
}

// Requests of one shape in one minute are one row; methods outside the
// closed set are one shape; shapes beyond the bound are dropped, not held.
func TestCountsByShape(t *testing.T) {
	t.Parallel()
	s := &sink{}
	w := newTestWriter(s, 3)
	t0 := time.Date(2030, 1, 1, 10, 0, 5, 0, time.UTC)
	ip := netip.MustParseAddr("203.0.113.5")
	for i := range 100 {
		w.Count(Shape{Minute: t0.Add(time.Duration(i) * 500 * time.Millisecond), ClientIP: ip, Method: "GET", Route: "/v1/restaurants", Status: 429})
	}
	w.Count(Shape{Minute: t0.Add(55 * time.Second), ClientIP: ip, Method: "GET", Route: "/v1/restaurants", Status: 429})
	for _, m := range []string{"BREW", "PROPFIND", "fsk_x"} {
		w.Count(Shape{Minute: t0, ClientIP: ip, Method: m, Route: "(unmatched)", Status: 404})
	}
	w.Count(Shape{Minute: t0, ClientIP: ip, Method: "GET", Route: "/docs", Status: 200}) // a fourth shape: over the bound
	require.NoError(t, w.Close(context.Background()))
	got := map[string]int64{}
	for _, c := range s.counts {
		got[c.Minute.Format("15:04")+" "+c.Method+" "+c.Route] = c.Requests
	}
	require.Equal(t, map[string]int64{"10:00 GET /v1/restaurants": 100, "10:01 GET /v1/restaurants": 1, "10:00 other (unmatched)": 3}, got)
}

// Counts that could not be written are kept and added to the next flush;
// a refused flush is dropped.
func TestCountsSurviveAFailedFlush(t *testing.T) {
	t.Parallel()
	s := &sink{fail: errors.New("database down")}
	w := newTestWriter(s, 10)
	shape := Shape{Minute: time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC), Method: "GET", Route: "/docs", Status: 200}
	w.Count(shape)
	w.Count(shape)
	w.flushCounts()
	require.Empty(t, s.counts)
	w.Count(shape)
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	w.flushCounts()
	require.Equal(t, []ShapeCount{{Shape: shape, Requests: 3}}, s.counts)

	s.mu.Lock()
	s.fail = ErrRejected
	s.mu.Unlock()
	w.Count(shape)
	w.flushCounts()
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	w.flushCounts()
	require.Len(t, s.counts, 1, "the refused flush is not tried again")
	require.NoError(t, w.Close(context.Background()))
}
