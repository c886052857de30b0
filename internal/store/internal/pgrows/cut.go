// A page is bounded by the bytes it carries as well as by its count: a
// record may be as large as a request body, and a page of 100 of them
// was held several times over while it was read, built and written.

package pgrows

import (
	"cmp"
	"math"
	"slices"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// RowOverhead is what a row costs a page beyond its columns' bytes: the
// member names and punctuation of its JSON, about this much for an
// envelope or a delivery.
const RowOverhead = 256

// rawSize is the size a row counts for against a page's bytes: its
// columns as PostgreSQL sent them, and RowOverhead.
func rawSize(raw [][]byte) int64 {
	n := int64(RowOverhead)
	for _, v := range raw {
		n += int64(len(v))
	}
	return n
}

// walkCut cuts a walk page by bytes while its rows arrive, so that no
// row beyond the cut is kept while the rest are read: the rows arrive in
// two branches (current versions by sequence, then versions as of the
// pin, in any order), and the page is the rows by sequence up to the
// first whose running size reaches the budget. Once some rows reach it,
// a row with a higher sequence can never be in the page and is not kept
// (not even decoded); a row with a lower one moves the cut down and the
// rows above the new cut are dropped. What is kept is therefore never
// more than the budget plus one row.
type walkCut struct {
	budget int64 // 0: no bound
	kept   int64 // bytes of the rows kept
	// last is the highest sequence a page can still hold; MaxInt64 until
	// the rows kept reach the budget.
	last int64
	// cut: a row was left out, so the page is not the walk's last.
	cut bool
}

func newWalkCut(budget *int64) walkCut {
	c := walkCut{last: math.MaxInt64}
	if budget != nil && *budget > 0 {
		c.budget = *budget
	}
	return c
}

// walkRowSize is what a decoded walk row counts for: its text and data,
// its fixed-size columns (six integers and a boolean, 45 bytes in binary)
// and RowOverhead. Computed from the row, so the rows kept need no
// record of their sizes; never less than what the statement counts
// (octet_length of data).
func walkRowSize(r *db.RecordWalkPageRow) int64 {
	n := int64(RowOverhead + 45 + len(r.RecordID) + len(r.MutationID) + len(r.Data))
	if r.SourceVersion != nil {
		n += int64(len(*r.SourceVersion))
	}
	return n
}

// skip reports whether a row at sequence seq is beyond the cut (and
// records that the page was cut).
func (c *walkCut) skip(seq int64) bool {
	if c.budget == 0 || seq <= c.last {
		return false
	}
	c.cut = true
	return true
}

// add counts the row just appended to items (walkRowSize) and returns
// items cut to the page when they reach the budget.
func (c *walkCut) add(items []db.RecordWalkPageRow) []db.RecordWalkPageRow {
	if c.budget == 0 {
		return items
	}
	r := &items[len(items)-1]
	if c.skip(r.Sequence) {
		// Decoded without a look first (the scan's fallback path).
		clear(items[len(items)-1:])
		return items[:len(items)-1]
	}
	if c.kept += walkRowSize(r); c.kept < c.budget {
		return items
	}
	slices.SortFunc(items, func(a, b db.RecordWalkPageRow) int { return cmp.Compare(a.Sequence, b.Sequence) })
	var sum int64
	for k := range items {
		sum += walkRowSize(&items[k])
		if sum >= c.budget {
			c.cut = c.cut || k+1 < len(items)
			clear(items[k+1:]) // the rows dropped let their data go
			c.kept, c.last = sum, items[k].Sequence
			return items[:k+1]
		}
	}
	return items
}

// deliveryCut ends a page of deliveries, which arrive in the page's
// order, at the first whose running size reaches the budget.
type deliveryCut struct {
	budget, kept int64 // budget 0: no bound
	full         bool
}

// take reports whether the row of raw values is kept (the page is not
// full yet); the first row left out marks the page cut.
func (c *deliveryCut) take(raw [][]byte) bool {
	if c.budget == 0 {
		return true
	}
	if c.full {
		return false
	}
	c.kept += rawSize(raw)
	c.full = c.kept >= c.budget
	return true
}
