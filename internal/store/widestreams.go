package store

import "sync"

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
// (the plain statement checks for itself). It holds at most wideMax
// streams (about 100 bytes each); a full memory forgets everything rather
// than grow.
type wideStreams struct {
	mu sync.Mutex
	m  map[streamKey]int64 // stream -> its largest record is at least this many bytes
}

type streamKey struct{ restaurantID, collection string }

const wideMax = 10_000

// summed reports whether a page of rows rows of the stream, bounded by
// maxBytes (nil: no bound), is known to need the summed statement.
func (w *wideStreams) summed(restaurantID, collection string, rows int32, maxBytes *int64) bool {
	if maxBytes == nil || rows <= 0 {
		return false
	}
	w.mu.Lock()
	least, ok := w.m[streamKey{restaurantID, collection}]
	w.mu.Unlock()
	return ok && least*int64(rows) >= *maxBytes
}

// declined remembers that the plain statement declined a page of rows
// rows of the stream bounded by maxBytes: its largest record is at least
// maxBytes / rows (rounded up). (A stream whose largest record is unknown
// declines too; remembering it the same way is at worst a summed
// statement where the plain one would also have declined.)
func (w *wideStreams) declined(restaurantID, collection string, rows int32, maxBytes *int64) {
	if maxBytes == nil || rows <= 0 {
		return
	}
	least := (*maxBytes + int64(rows) - 1) / int64(rows)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[streamKey]int64)
	}
	if len(w.m) >= wideMax {
		clear(w.m)
	}
	k := streamKey{restaurantID, collection}
	w.m[k] = max(w.m[k], least)
}
