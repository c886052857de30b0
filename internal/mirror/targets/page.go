package targets

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
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

// ApplyRecords writes one page's records of a collection, in one
// statement for the page's live records and marked tombstones (one round
// trip per page, not per record), and keeps the collection's typed
// relations in step in the same transaction. A record replaces the stored one only
// when its sequence is higher, except in a rebuild (force), where the
// server's answer replaces the copy outright; every row a rebuild touches
// carries its gen, so it can drop at the end what it did not see.
func (p *Page) ApplyRecords(ctx context.Context, restaurantID, collection string, recs []Record, mode TombstoneMode, gen int64, force bool) error {
	tbl := quotedTable(collection)
	// A page names each record once; should it not, the highest sequence
	// wins here, as it would have over two statements (one upsert cannot
	// touch a row twice).
	byID := make(map[string]int, len(recs))
	var latest []Record
	for _, r := range recs {
		if i, ok := byID[r.ID]; ok {
			if r.Sequence > latest[i].Sequence {
				latest[i] = r
			}
			continue
		}
		byID[r.ID] = len(latest)
		latest = append(latest, r)
	}
	var upserts []Record
	var gone []string // ids this page deleted or made tombstones: their typed rows go
	for _, r := range latest {
		if r.Deleted && mode == TombstoneDelete {
			deleted, err := p.deleteRecord(ctx, tbl, restaurantID, r, force)
			if err != nil {
				return err
			}
			if deleted {
				gone = append(gone, r.ID)
			}
			continue
		}
		upserts = append(upserts, r)
	}
	var live []typed.Input
	if len(upserts) > 0 {
		cond := "excluded.sequence > " + tbl + ".sequence"
		if force {
			cond = "true"
		}
		const row = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
		values := strings.TrimSuffix(strings.Repeat(row+", ", len(upserts)), ", ")
		// A tombstone keeps the last data in mark mode (NULL when the record
		// was never seen alive here). RETURNING names the rows the upsert
		// wrote (not those it left because they were newer).
		upsert := p.t.d.q(`INSERT INTO ` + tbl + ` (` + collectionColumns + `)
		VALUES ` + values + `
		ON CONFLICT (restaurant_id, id) DO UPDATE SET sequence = excluded.sequence, deleted = excluded.deleted,
			data = CASE WHEN excluded.deleted THEN ` + tbl + `.data ELSE excluded.data END,
			captured_at = excluded.captured_at, received_at = excluded.received_at, mutation_id = excluded.mutation_id,
			source_version = excluded.source_version, payload_version = excluded.payload_version,
			asset_sha256 = CASE WHEN excluded.deleted THEN ` + tbl + `.asset_sha256 ELSE excluded.asset_sha256 END,
			walk_gen = excluded.walk_gen
		WHERE ` + cond + `
		RETURNING id`)
		args := make([]any, 0, 12*len(upserts))
		for _, r := range upserts {
			var data any
			if r.Data != nil {
				data = string(r.Data)
			}
			args = append(args, restaurantID, r.ID, r.Sequence, r.Deleted, data, r.CapturedAt, r.ReceivedAt,
				r.MutationID, r.SourceVersion, r.PayloadVersion, nullString(r.AssetSHA256), gen)
		}
		rows, err := p.tx.QueryContext(ctx, upsert, args...)
		if err != nil {
			return err
		}
		written, err := scanStrings(rows)
		if err != nil {
			return err
		}
		wrote := make(map[string]bool, len(written))
		for _, id := range written {
			wrote[id] = true
		}
		for _, r := range upserts {
			switch {
			case !wrote[r.ID]:
			case r.Deleted:
				gone = append(gone, r.ID)
			default:
				live = append(live, typed.Input{ID: r.ID, Data: r.Data, Sequence: r.Sequence, CapturedAt: r.CapturedAt, ReceivedAt: r.ReceivedAt})
			}
		}
	}
	return p.t.typed.replace(ctx, p.tx, collection, restaurantID, gone, live, false)
}

// deleteRecord applies a tombstone in delete mode: the row goes when the
// tombstone is newer (always in a rebuild). It reports whether it did.
func (p *Page) deleteRecord(ctx context.Context, tbl, restaurantID string, r Record, force bool) (bool, error) {
	var seq int64
	switch err := p.tx.QueryRowContext(ctx, p.t.d.q(`SELECT sequence FROM `+tbl+` WHERE restaurant_id = ? AND id = ?`), restaurantID, r.ID).Scan(&seq); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil // never had it: created and deleted between two syncs
	case err != nil:
		return false, err
	}
	if !force && r.Sequence <= seq {
		return false, nil
	}
	_, err := p.tx.ExecContext(ctx, p.t.d.q(`DELETE FROM `+tbl+` WHERE restaurant_id = ? AND id = ?`), restaurantID, r.ID)
	return err == nil, err
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

// ApplyDeliveries inserts a page of deliveries in one statement (per
// statesChunk of them), and their typed rows in the same transaction;
// they are immutable, so a known id is left as it is (deduplication on
// id).
func (p *Page) ApplyDeliveries(ctx context.Context, restaurantID string, ds []Delivery) (int64, error) {
	var inserted []typed.Input
	for start := 0; start < len(ds); start += statesChunk {
		chunk := ds[start:min(len(ds), start+statesChunk)]
		args := make([]any, 0, 8*len(chunk))
		byID := make(map[string]Delivery, len(chunk))
		for _, d := range chunk {
			args = append(args, restaurantID, d.ID, d.OccurredAt, d.IsCompliant, d.SupplierID, d.SupplierName, d.ImageCount, string(d.Data))
			byID[d.ID] = d
		}
		rows, err := p.tx.QueryContext(ctx, p.t.d.q(`INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, image_count, data)
			VALUES `+rowsOf("(?, ?, ?, ?, ?, ?, ?, ?)", len(chunk))+` ON CONFLICT (restaurant_id, id) DO NOTHING RETURNING id`), args...)
		if err != nil {
			return int64(len(inserted)), err
		}
		ids, err := scanStrings(rows)
		if err != nil {
			return int64(len(inserted)), err
		}
		for _, id := range ids {
			inserted = append(inserted, typed.Input{ID: id, Data: byID[id].Data})
		}
	}
	// Only deliveries new here have typed rows to write, and none yet.
	return int64(len(inserted)), p.t.typed.replace(ctx, p.tx, typed.DeliveriesSource, restaurantID, nil, inserted, true)
}
