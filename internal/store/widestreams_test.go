package store

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A declined page teaches the least size the stream's largest record has
// (its bound over its rows, rounded up), which then decides pages of any
// rows and bound: summed when that size times their rows reaches their
// bound. A larger lesson raises it, a smaller one never lowers it; pages
// without a bound are never summed, whatever the bound; and the memory
// never holds more than wideMax streams (a full one forgets about half).
func TestWideStreamsBounded(t *testing.T) {
	t.Parallel()
	var w wideStreams
	bound := func(n int64) *int64 { return &n }
	require.False(t, w.summed("r1", "users", 101, bound(4<<20)), "nothing learnt")
	w.declined("r1", "users", 101, bound(4<<20)) // at least 41,528 bytes
	require.True(t, w.summed("r1", "users", 101, bound(4<<20)))
	require.True(t, w.summed("r1", "users", 26, bound(1<<20)), "26 x 41,528 reaches 1 MiB")
	require.False(t, w.summed("r1", "users", 25, bound(1<<20)), "25 x 41,528 does not")
	require.False(t, w.summed("r1", "users", 101, nil), "no bound")
	require.False(t, w.summed("r1", "areas", 101, bound(4<<20)), "another stream")
	require.False(t, w.summed("r2", "users", 101, bound(4<<20)), "another restaurant")
	w.declined("r1", "users", 101, bound(1000)) // at least 10: learnt nothing new
	require.True(t, w.summed("r1", "users", 26, bound(1<<20)))
	w.declined("r1", "users", 2, bound(1<<20)) // at least 524,288
	require.True(t, w.summed("r1", "users", 2, bound(1<<20)))
	w.declined("r1", "none", 0, bound(1<<20))
	w.declined("r1", "none", 10, nil)
	require.NotContains(t, w.m, streamKey{"r1", "none"}, "no rows or no bound teaches nothing")

	huge := int64(math.MaxInt64)
	w.declined("r1", "huge", 3, &huge)
	require.True(t, w.summed("r1", "huge", 3, &huge), "no overflow at the largest bound")
	require.False(t, w.summed("r1", "huge", 2, &huge))

	for i := range wideMax - 2 {
		w.declined("s"+strconv.Itoa(i), "users", 1, bound(1))
	}
	require.Len(t, w.m, wideMax)
	w.declined("r1", "users", 1, bound(1)) // known: raised in place, nothing forgotten
	require.Len(t, w.m, wideMax)
	w.declined("over", "users", 1, bound(1))
	require.Len(t, w.m, wideMax/2, "a full memory forgets about half")
	require.True(t, w.summed("over", "users", 1, bound(1)), "and keeps the new one")
}
