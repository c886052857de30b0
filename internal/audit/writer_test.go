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
// closed set are one shape; requests of new shapes beyond the shapes held
// are counted in the row of the rest, not dropped.
func TestCountsByShape(t *testing.T) {
	t.Parallel()
	s := &sink{}
	w := newTestWriter(s, 3)
	t0 := time.Date(2030, 1, 1, 10, 0, 5, 0, time.UTC)
	ip := netip.MustParsePrefix("203.0.113.5/32")
	for i := range 100 {
		w.Count(Shape{Minute: t0.Add(time.Duration(i) * 500 * time.Millisecond), Client: ip, Method: "GET", Route: "/v1/restaurants", Status: 429})
	}
	w.Count(Shape{Minute: t0.Add(55 * time.Second), Client: ip, Method: "GET", Route: "/v1/restaurants", Status: 429})
	for _, m := range []string{"BREW", "PROPFIND", "fsk_x"} {
		w.Count(Shape{Minute: t0, Client: ip, Method: m, Route: "(unmatched)", Status: 404})
	}
	w.Count(Shape{Minute: t0, Client: ip, Method: "GET", Route: "/docs", Status: 200}) // a fourth shape: over the bound
	require.NoError(t, w.Close(context.Background()))
	got := map[string]int64{}
	for _, c := range s.counts {
		got[c.Minute.Format("15:04")+" "+c.Method+" "+c.Route] = c.Requests
	}
	require.Equal(t, map[string]int64{"10:00 GET /v1/restaurants": 100, "10:01 GET /v1/restaurants": 1, "10:00 other (unmatched)": 3,
		"10:00 other (others)": 1}, got)
}

// However many clients a minute hears from, it gets at most MaxRows rows:
// the heaviest shapes by name, and every other request counted in one row
// of the rest; a shape named in a minute stays named in later flushes of
// that minute, and a new one finds no room. No request is lost.
func TestCountsAreBoundedInRowsPerMinute(t *testing.T) {
	t.Parallel()
	s := &sink{}
	w := NewWriter(s.record, slog.New(slog.DiscardHandler), Options{FlushInterval: time.Hour, Counts: s.count, MaxRows: 10})
	minute := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	client := func(i int) netip.Prefix {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}), 32)
	}
	shape := func(i int) Shape {
		return Shape{Minute: minute, Client: client(i), Method: "GET", Route: "/v1/changes", Status: 401, Outcome: "unknown"}
	}
	heavy := Shape{Minute: minute, Client: netip.MustParsePrefix("2001:db8:1:2::/64"), Method: "GET", Route: "/v1/changes", Status: 429,
		Outcome: "rate-limited"}
	for range 5 {
		w.Count(heavy)
	}
	for i := range 200 {
		w.Count(shape(i))
	}
	w.flushCounts()
	rows := map[Shape]int64{}
	var total int64
	for _, c := range s.counts {
		rows[c.Shape] = c.Requests
		total += c.Requests
	}
	require.Len(t, rows, 10, "nine shapes by name and the rest")
	require.Equal(t, int64(205), total, "every request counted")
	require.Equal(t, int64(5), rows[heavy], "the heaviest keeps its name")
	require.Equal(t, int64(200-8), rows[RestShape(minute)])

	named := 0
	for i := range 200 {
		if _, ok := rows[shape(i)]; ok {
			named++
			w.Count(shape(i)) // named: stays named
		}
	}
	require.Equal(t, 8, named)
	w.Count(Shape{Minute: minute, Client: client(999), Method: "GET", Route: "/docs", Status: 200}) // new: the rest
	s.counts = nil
	w.flushCounts()
	second := map[Shape]int64{}
	for _, c := range s.counts {
		second[c.Shape] = c.Requests
	}
	require.Len(t, second, 9)
	require.Equal(t, int64(1), second[RestShape(minute)])

	// The next minute has room again.
	s.counts = nil
	next := shape(500)
	next.Minute = minute.Add(time.Minute)
	w.Count(next)
	require.NoError(t, w.Close(context.Background()))
	require.Equal(t, []ShapeCount{{Shape: next, Requests: 1}}, s.counts)
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
