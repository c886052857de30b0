package targets

import (
	"context"
	"database/sql"
)

// Page is one transaction of the target (Target.Update): what a page of
// the API brings, written together with the position that follows it, so
// a run stopped anywhere resumes after the last page applied. Records and
// deliveries go through ApplyRecords and ApplyDeliveries, whichever way
// the page was fetched; the caller makes sure of the collection's table
// first (Target.EnsureCollection).
type Page struct {
	tx *sql.Tx
	t  *Target
}

// PutState writes a stream's state with the page.
func (p *Page) PutState(ctx context.Context, restaurantID, stream string, s StreamState) error {
	return putState(ctx, p.tx, p.t.d, restaurantID, stream, s)
}

// PutFeedCursor keeps the key-wide feed's cursor with the page it follows
// ("" removes it: the listing is over, or starts over).
func (p *Page) PutFeedCursor(ctx context.Context, cursor string) error {
	return putFeedCursor(ctx, p.tx, p.t.d, cursor)
}

// PutChangesPosition keeps, with the page, the position of the next
// listing and the scope it was listed for.
func (p *Page) PutChangesPosition(ctx context.Context, scope, pos string) error {
	return putChangesPosition(ctx, p.tx, p.t.d, scope, pos)
}

// Record is one envelope as the mirror stores it.
type Record struct {
	ID             string
	Sequence       int64
	Deleted        bool
	Data           []byte // nil on a tombstone
	CapturedAt     int64
	ReceivedAt     int64
	MutationID     string
	SourceVersion  *string
	PayloadVersion int64
	AssetSHA256    string // data.asset.sha256 once uploaded
}

// TombstoneMode says what a tombstone does to the mirrored row.
type TombstoneMode int

const (
	// TombstoneMark keeps the row, its last data and deleted = true, so
	// records that refer to it still resolve (the spec's advice).
	TombstoneMark TombstoneMode = iota
	// TombstoneDelete removes the row.
	TombstoneDelete
)

// ApplyRecords writes one page's records of a collection's stream (see
// ApplyCollection, which writes many streams' at once). A record
// replaces the stored one only when its sequence is higher, except in a
// rebuild (force), where the server's answer replaces the copy outright;
// every row a rebuild touches carries its gen, so it can drop at the end
// what it did not see.
func (p *Page) ApplyRecords(ctx context.Context, restaurantID, collection string, recs []Record, mode TombstoneMode, gen int64, force bool) error {
	return p.ApplyCollection(ctx, collection, []StreamRecords{{Restaurant: restaurantID, Records: recs, Gen: gen}}, mode, force)
}

// DropStale removes, at the end of a rebuild, the rows the rebuild's walk
// did not bring (the server no longer has them: its data was restored),
// with their typed rows.
func (p *Page) DropStale(ctx context.Context, restaurantID, collection string, gen int64) (int64, error) {
	rows, err := p.tx.QueryContext(ctx, p.t.d.q(`SELECT id FROM `+quotedTable(collection)+` WHERE restaurant_id = ? AND walk_gen < ?`), restaurantID, gen)
	if err != nil {
		return 0, err
	}
	stale, err := scanStrings(rows)
	if err != nil {
		return 0, err
	}
	if err := p.t.typed.replace(ctx, p.tx, collection, restaurantID, stale, nil, false); err != nil {
		return 0, err
	}
	res, err := p.tx.ExecContext(ctx, p.t.d.q(`DELETE FROM `+quotedTable(collection)+` WHERE restaurant_id = ? AND walk_gen < ?`), restaurantID, gen)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Delivery is one delivery as the mirror stores it.
type Delivery struct {
	ID           string
	OccurredAt   int64
	IsCompliant  bool
	SupplierID   string
	SupplierName string
	ImageCount   int64
	Data         []byte
}

// ApplyDeliveries inserts a page of one restaurant's deliveries (see
// ApplyDeliveriesOf) and returns how many were new.
func (p *Page) ApplyDeliveries(ctx context.Context, restaurantID string, ds []Delivery) (int64, error) {
	n, err := p.ApplyDeliveriesOf(ctx, []StreamDeliveries{{Restaurant: restaurantID, Deliveries: ds}})
	return n[restaurantID], err
}
