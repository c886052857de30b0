package store

import (
	"strings"
	"sync"
)

// wideStreams remembers, per stream, how large its largest record is at
// least, as learned from a walk page the plain walk statements declined
// (pgrows.RecordWalkPageInto): their rows times that size could reach the
// page's byte bound. A later page of the stream whose rows times the
// remembered size reach its bound then runs the summed statement at once,
// one statement instead of the plain one's decline and the summed one.
// Ingest only ever raises a stream's largest record
// (collection_streams.max_record_bytes), so a size remembered is never
// more than the stream's: the memory can make a page run the summed
// statement, which bounds any page, but never skip it where it is needed
// (the plain statement checks for itself). It can make a page run it
// where the plain statement would not have declined (a stream whose size
// was unknown when it declined, then measured; a stream deleted with its
// restaurant and written again): only slower, until the memory forgets.
// It holds at most wideMax streams (about 100 bytes each); a full memory
// forgets about half of them, chosen at random, rather than grow.
type wideStreams struct {
	mu sync.Mutex
	m  map[streamKey]int64 // stream -> its largest record is at least this many bytes
}

type streamKey struct{ restaurantID, collection string }

const wideMax = 10_000

// perRow is the least size of a record whose rows rows reach maxBytes:
// maxBytes over rows, rounded up (without overflow for any bound).
func perRow(maxBytes int64, rows int32) int64 {
	n := maxBytes / int64(rows)
	if maxBytes%int64(rows) != 0 {
		n++
	}
	return n
}

// summed reports whether a page of rows rows of the stream, bounded by
// maxBytes (nil: no bound), is known to need the summed statement.
func (w *wideStreams) summed(restaurantID, collection string, rows int32, maxBytes *int64) bool {
	if maxBytes == nil || rows <= 0 {
		return false
	}
	w.mu.Lock()
	least, ok := w.m[streamKey{restaurantID, collection}]
	w.mu.Unlock()
	return ok && least >= perRow(*maxBytes, rows)
}

// declined remembers that the plain statement declined a page of rows
// rows of the stream bounded by maxBytes: its largest record is at least
// perRow(maxBytes, rows) (or unknown).
func (w *wideStreams) declined(restaurantID, collection string, rows int32, maxBytes *int64) {
	if maxBytes == nil || rows <= 0 {
		return
	}
	least := perRow(*maxBytes, rows)
	w.mu.Lock()
	defer w.mu.Unlock()
	k := streamKey{restaurantID, collection}
	if old, ok := w.m[k]; ok {
		w.m[k] = max(old, least)
		return
	}
	if w.m == nil {
		w.m = make(map[streamKey]int64)
	}
	if len(w.m) >= wideMax {
		for old := range w.m { // Go's map order is random
			if len(w.m) < wideMax/2 {
				break
			}
			delete(w.m, old)
		}
	}
	// Copies: the ids may be slices of a larger buffer (a request's).
	w.m[streamKey{strings.Clone(restaurantID), strings.Clone(collection)}] = least
}
