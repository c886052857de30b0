package targets

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// Files are the files a mirror downloaded (files: one row per digest) and
// what refers to them (file_links), and the work they leave: records and
// deliveries whose files are not all here yet.
type Files struct{ *conn }

// File is a downloaded file, or an item of a record's or a delivery's
// file list.
type File struct {
	ID          string // the item's id in its list
	SHA256      string
	ContentType string
	ByteLength  int64
}

// FileTables are the tables files and file_links as an export writes
// them beside the typed relations (export.Write), with their columns in
// order and their types: which file each record or delivery photograph
// has, where the mirror stored it, and how large it is, answerable from
// the export alone. downloaded_at stays epoch milliseconds, as the table
// holds it.
func FileTables() []*typed.Relation {
	text := func(name, from, what string, key bool) typed.Column {
		return typed.Column{Name: name, Kind: typed.Text, Key: key, From: from, Description: what}
	}
	return []*typed.Relation{{
		Name:        "files",
		Description: "Each file the mirror downloaded (foodsafe-sync --files), once per digest.",
		Columns: []typed.Column{
			text("sha256", "sha256", "The file's SHA-256, in hex.", true),
			text("content_type", "contentType", "The file's media type.", false),
			{Name: "byte_length", Kind: typed.Integer, From: "byteLength", Description: "The file's size in bytes."},
			text("path", "path", "Where the mirror stored it, under --files-dir.", false),
			{Name: "downloaded_at", Kind: typed.Millis, From: "downloaded_at", Description: "When the mirror downloaded it, in epoch milliseconds."},
		},
	}, {
		Name:        "file_links",
		Description: "Which record or delivery each file belongs to.",
		Columns: []typed.Column{
			text("restaurant_id", "restaurantId", "The restaurant of the record or delivery.", true),
			text("source", "source", "asset (a record's file) or delivery-image (a delivery's photograph).", true),
			text("parent", "parent", "collection/recordId for an asset, the delivery id for a photograph.", true),
			text("item_id", "item_id", "The asset's objectKey or the photograph's image id.", true),
			text("sha256", "sha256", "The file (files.sha256).", false),
			text("content_type", "contentType", "The file's media type.", false),
		},
	}}
}

// MissingAssets are the live records of a collection whose uploaded
// asset's digest the target has not stored.
func (f *Files) MissingAssets(ctx context.Context, restaurant, coll string) ([]string, error) {
	tbl := quotedTable(coll)
	return f.strings(ctx, `SELECT id FROM `+tbl+` WHERE restaurant_id = ? AND NOT deleted AND asset_sha256 IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM files WHERE files.sha256 = `+tbl+`.asset_sha256) ORDER BY id`, restaurant)
}

// PendingDelivery is a delivery whose photographs have not all been
// fetched.
type PendingDelivery struct {
	ID         string
	ImageCount int64
}

// MissingImages are the deliveries whose photographs have not all been
// fetched: those never listed, whatever their imageCount (the provider's
// own figure, which the images may outnumber), and those listed with fewer
// images than it.
func (f *Files) MissingImages(ctx context.Context, restaurant string) ([]PendingDelivery, error) {
	rows, err := f.db.QueryContext(ctx, f.d.q(`SELECT id, image_count FROM deliveries WHERE restaurant_id = ? AND NOT images_synced ORDER BY id`), restaurant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PendingDelivery
	for rows.Next() {
		var d PendingDelivery
		if err := rows.Scan(&d.ID, &d.ImageCount); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Has reports whether the target holds a file of that digest.
func (f *Files) Has(ctx context.Context, sha string) (bool, error) {
	var one int
	err := f.db.QueryRowContext(ctx, f.d.q(`SELECT 1 FROM files WHERE sha256 = ?`), sha).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Put records a downloaded file at rel (relative to the files directory).
func (f *Files) Put(ctx context.Context, it File, rel string) error {
	_, err := f.db.ExecContext(ctx, f.d.q(`INSERT INTO files (sha256, content_type, byte_length, path, downloaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (sha256) DO NOTHING`), it.SHA256, it.ContentType, it.ByteLength, rel, time.Now().UnixMilli())
	return err
}

// Link records that item it of a list (source: asset or delivery-image;
// parent: the record or delivery) is the file of its digest.
func (f *Files) Link(ctx context.Context, restaurant, source, parent string, it File) error {
	_, err := f.db.ExecContext(ctx, f.d.q(`INSERT INTO file_links (restaurant_id, source, parent, item_id, sha256, content_type) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (restaurant_id, source, parent, item_id) DO UPDATE SET sha256 = excluded.sha256, content_type = excluded.content_type`),
		restaurant, source, parent, it.ID, it.SHA256, it.ContentType)
	return err
}

// MarkImagesSynced records that every photograph of a delivery is here.
func (f *Files) MarkImagesSynced(ctx context.Context, restaurant, deliveryID string) error {
	_, err := f.db.ExecContext(ctx, f.d.q(`UPDATE deliveries SET images_synced = ? WHERE restaurant_id = ? AND id = ?`), true, restaurant, deliveryID)
	return err
}
