package pgrows

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// A walk page cut by bytes while its rows arrive in any order is the page
// cut after sorting them all: the rows by sequence up to the first whose
// running size reaches the budget, never more than the budget and one
// row, and marked cut exactly when rows were left out.
func TestWalkCutIsTheSortedCut(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := rng.IntN(12)
		seqs := rng.Perm(40)[:n]
		sizes := map[int64]int64{}
		rows := map[int64]db.RecordWalkPageRow{}
		budget := int64(1 + rng.IntN(5000))
		for _, s := range seqs {
			r := db.RecordWalkPageRow{Sequence: int64(s), Data: make([]byte, rng.IntN(2000))}
			rows[int64(s)], sizes[int64(s)] = r, walkRowSize(&r)
		}
		// What a page is: sort, then cut.
		sorted := slices.Clone(seqs)
		slices.Sort(sorted)
		var want []int64
		var sum int64
		for _, s := range sorted {
			want = append(want, int64(s))
			if sum += sizes[int64(s)]; sum >= budget {
				break
			}
		}
		wantCut := len(want) < n

		b := budget
		c := newWalkCut(&b)
		var items []db.RecordWalkPageRow
		var most int64
		for _, s := range seqs {
			if c.skip(int64(s)) {
				continue
			}
			items = c.add(append(items, rows[int64(s)]))
			var kept int64
			for _, r := range items {
				kept += sizes[r.Sequence]
			}
			most = max(most, kept)
		}
		var got []int64
		for _, r := range items {
			got = append(got, r.Sequence)
		}
		slices.Sort(got)
		require.Equal(t, want, got, "arrival %v sizes %v budget %d", seqs, sizes, budget)
		require.Equal(t, wantCut, c.cut, "arrival %v sizes %v budget %d", seqs, sizes, budget)
		require.Less(t, most, budget+2000+RowOverhead+45, "kept at most the budget and one row")
	}
}

// Without a bound nothing is cut.
func TestWalkCutUnbounded(t *testing.T) {
	t.Parallel()
	c := newWalkCut(nil)
	var items []db.RecordWalkPageRow
	for s := range int64(100) {
		require.False(t, c.skip(s))
		items = c.add(append(items, db.RecordWalkPageRow{Sequence: s, Data: make([]byte, 1<<20)}))
	}
	require.Len(t, items, 100)
	require.False(t, c.cut)
}
