package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Unknown ids are remembered for unknownFor, and the memory never holds
// more than unknownMax of them: expired ones go first, then all.
func TestUnknownKeysBounded(t *testing.T) {
	t.Parallel()
	var u unknownKeys
	t0 := time.Unix(1_800_000_000, 0)
	u.add("a", t0)
	require.True(t, u.has("a", t0.Add(unknownFor-time.Millisecond)))
	require.False(t, u.has("a", t0.Add(unknownFor)))
	require.False(t, u.has("b", t0))

	for i := range unknownMax - 1 {
		u.add(strconv.Itoa(i), t0.Add(unknownFor))
	}
	require.Len(t, u.ids, unknownMax)
	u.add("next", t0.Add(unknownFor)) // "a" has expired: it goes, nothing else
	require.Len(t, u.ids, unknownMax)
	require.False(t, u.has("a", t0.Add(unknownFor)))
	require.True(t, u.has("0", t0.Add(unknownFor)))
	u.add("over", t0.Add(unknownFor)) // none expired: all forgotten
	require.Len(t, u.ids, 1)
	require.True(t, u.has("over", t0.Add(unknownFor)))
}
