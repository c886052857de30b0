package store

// For the external tests of this package (package store_test), which
// need a real database through testdb, itself an importer of store.
var (
	ProveListening  = proveListening
	ErrNotListening = errNotListening
	// IngestNew skips RecordIngest's replay check, as if an identical
	// request had committed right after it.
	IngestNew = (*Store).ingestNew
)

// The two ways StreamsChanged lists a page, each on its own.
var (
	StreamsChangedScan  = (*Store).streamsChangedScan
	StreamsChangedProbe = (*Store).streamsChangedProbe
)
