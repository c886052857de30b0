package tests

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireReceivedInOrder checks the receivedAt rule on a stream's changes
// (a full walk of records written once each): by sequence, receivedAt never
// decreases and is never before capturedAt, and it lies within [low,
// high+skew], the span of the service's clock readings widened by the
// tolerated skew.
func requireReceivedInOrder(t *testing.T, recs []envelopeDoc, low, high int64, skew time.Duration) {
	t.Helper()
	var prevSeq, prevReceived int64
	for _, e := range recs {
		seq, err := strconv.ParseInt(e.Sequence, 10, 64)
		require.NoError(t, err)
		received, err := strconv.ParseInt(e.ReceivedAt, 10, 64)
		require.NoError(t, err)
		captured, err := strconv.ParseInt(e.CapturedAt, 10, 64)
		require.NoError(t, err)
		require.Greater(t, seq, prevSeq, "walk order")
		require.GreaterOrEqual(t, received, prevReceived, "receivedAt of sequence %d went back from %d", seq, prevReceived)
		require.GreaterOrEqual(t, received, captured, "receivedAt of sequence %d is before its capturedAt", seq)
		require.GreaterOrEqual(t, received, low, "sequence %d", seq)
		require.LessOrEqual(t, received, high+skew.Milliseconds(), "sequence %d: beyond the skew allowance", seq)
		prevSeq, prevReceived = seq, received
	}
}

// A capture a few minutes ahead (within the tolerated skew) raises its
// receivedAt to its capturedAt; a change received after it, at the real
// time, is not given an earlier receivedAt: ordering on receivedAt keeps
// sequence order (spec 2.3). The same holds when the server's clock steps
// back between two writes.
func TestReceivedAtFollowsSequence(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	clock := time.UnixMilli(1_800_000_000_000)
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "cooling:write", "cooling:read"))
	now := clock.UnixMilli()
	skew := a.cfg.MaxClockSkew
	ahead := now + (skew - time.Minute).Milliseconds()

	e := a.putAt(key, "r1", "areas", "a", "m-a", ahead)
	require.Equal(t, strconv.FormatInt(ahead, 10), e.ReceivedAt, "raised to its capturedAt")
	e = a.putAt(key, "r1", "areas", "b", "m-b", now)
	require.Equal(t, strconv.FormatInt(ahead, 10), e.ReceivedAt, "not earlier than the change before it")
	requireReceivedInOrder(t, a.walkAll(key, "r1", "areas", 100), now, now, skew)

	// The clock steps back (NTP, a failover to a host running behind).
	a.putAt(key, "r1", "cooling", "c1", "m-c1", now-1000)
	mu.Lock()
	clock = clock.Add(-30 * time.Second)
	mu.Unlock()
	e = a.putAt(key, "r1", "cooling", "c2", "m-c2", now-40_000)
	require.Equal(t, strconv.FormatInt(now, 10), e.ReceivedAt)
	requireReceivedInOrder(t, a.walkAll(key, "r1", "cooling", 100), now-30_000, now, skew)
}

// putAt ingests an area (or a cooling record) captured at capturedAt.
func (a *app) putAt(key, restaurant, collection, id, mutation string, capturedAt int64) envelopeDoc {
	a.t.Helper()
	data := area(id)
	if collection == "cooling" {
		data = map[string]any{"timestamp": "1", "product": "Soup", "beginDate": "1", "beginTemperature": 63}
	}
	r := a.ingest(key, restaurant, collection, id, mutation, snapshot(restaurant, id, mutation, capturedAt, false, data))
	require.Equal(a.t, http.StatusOK, r.Status, "body: %s", r.Body)
	var out struct{ Data envelopeDoc }
	r.JSON(a.t, &out)
	return out.Data
}

// Many writers into one stream, on a clock that every reading moves back a
// little (so the time each writer took says nothing about the order in
// which they get the stream's lock), some captures ahead within the skew:
// walked by sequence, receivedAt never decreases, never precedes
// capturedAt, and stays within the skew of the clock's readings.
func TestReceivedAtUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	start := time.UnixMilli(1_800_000_000_000)
	clock := start
	a := newApp(t, withClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(-time.Millisecond)
		return clock
	}))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read"))
	const writers, each = 12, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				captured := start.UnixMilli() - 60_000
				if (w+i)%4 == 0 {
					captured = start.UnixMilli() + 60_000 // ahead, within the skew
				}
				r := a.ingest(key, "r1", "areas", id, "m-"+id, snapshot("r1", id, "m-"+id, captured, false, area(id)))
				if r.Status != http.StatusOK {
					t.Errorf("%s: %d %s", id, r.Status, r.Body)
				}
			}
		}()
	}
	wg.Wait()
	recs := a.walkAll(key, "r1", "areas", 100)
	require.Len(t, recs, writers*each)
	mu.Lock()
	low := clock.UnixMilli()
	mu.Unlock()
	requireReceivedInOrder(t, recs, low, start.UnixMilli(), a.cfg.MaxClockSkew)
}
