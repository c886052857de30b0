package targets

import (
	"context"
	"database/sql"
	"fmt"
	"maps"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// A page of the key-wide feed brings the records of hundreds of streams.
// They are written a collection at a time, every stream of it in the same
// statements (multi-row VALUES, or arrays through unnest in PostgreSQL's
// deletes), so a page costs the target a number of statements bounded by
// the collections it touches and their typed relations, never by its
// streams or records. Multi-row statements keep one code path for both
// dialects; COPY or a pgx batch would need pgx's own connection, which
// database/sql's transaction does not hand out.

// StreamRecords is one stream's records on a page, and the walk
// generation its rows carry.
type StreamRecords struct {
	Restaurant string
	Records    []Record
	Gen        int64
}

// StreamDeliveries is one restaurant's deliveries on a page.
type StreamDeliveries struct {
	Restaurant string
	Deliveries []Delivery
}

// rowKey names a mirrored row: its restaurant and its id.
type rowKey struct{ restaurant, id string }

// keyedRecord is a record with its restaurant and generation.
type keyedRecord struct {
	Record
	restaurant string
	gen        int64
}

// keyedInput is a typed layer's input with its restaurant.
type keyedInput struct {
	restaurant string
	in         typed.Input
}

// recordArgs is the parameters of a row of the records upsert.
const recordArgs = 12

// ApplyCollection writes a page's records of one collection, every
// stream of it at once (see ApplyRecords for what a record does to its
// row), and keeps the collection's typed relations in step in the same
// transaction.
func (p *Page) ApplyCollection(ctx context.Context, collection string, streams []StreamRecords, mode TombstoneMode, force bool) error {
	tbl := quotedTable(collection)
	// A page names each record once; should it not, the highest sequence
	// wins here, as it would have over two statements (one upsert cannot
	// touch a row twice).
	byKey := map[rowKey]int{}
	var latest []keyedRecord
	for _, s := range streams {
		for _, r := range s.Records {
			k := rowKey{s.Restaurant, r.ID}
			if i, ok := byKey[k]; ok {
				if r.Sequence > latest[i].Sequence {
					latest[i] = keyedRecord{r, s.Restaurant, s.Gen}
				}
				continue
			}
			byKey[k] = len(latest)
			latest = append(latest, keyedRecord{r, s.Restaurant, s.Gen})
		}
	}
	var upserts, tombstones []keyedRecord
	for _, r := range latest {
		if r.Deleted && mode == TombstoneDelete {
			tombstones = append(tombstones, r)
			continue
		}
		upserts = append(upserts, r)
	}
	gone, err := p.deleteRecords(ctx, tbl, tombstones, force) // ids this page deleted or made tombstones: their typed rows go
	if err != nil {
		return err
	}
	var live []keyedInput
	for start := 0; start < len(upserts); start += maxArgs / recordArgs {
		chunk := upserts[start:min(len(upserts), start+maxArgs/recordArgs)]
		written, err := p.upsertRecords(ctx, tbl, chunk, force)
		if err != nil {
			return err
		}
		for _, r := range chunk {
			switch {
			case !written[rowKey{r.restaurant, r.ID}]:
			case r.Deleted:
				gone = append(gone, rowKey{r.restaurant, r.ID})
			default:
				live = append(live, keyedInput{r.restaurant, typed.Input{ID: r.ID, Data: r.Data, Sequence: r.Sequence, CapturedAt: r.CapturedAt, ReceivedAt: r.ReceivedAt}})
			}
		}
	}
	return p.t.typed.replaceMany(ctx, p.tx, collection, gone, live, false)
}

// upsertRecords writes rows in one statement and returns those it wrote
// (not those it left because they were newer).
func (p *Page) upsertRecords(ctx context.Context, tbl string, rows []keyedRecord, force bool) (map[rowKey]bool, error) {
	cond := "excluded.sequence > " + tbl + ".sequence"
	if force {
		cond = "true"
	}
	// A tombstone keeps the last data in mark mode (NULL when the record
	// was never seen alive here).
	upsert := p.t.d.q(`INSERT INTO ` + tbl + ` (` + collectionColumns + `)
		VALUES ` + rowsOf(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, len(rows)) + `
		ON CONFLICT (restaurant_id, id) DO UPDATE SET sequence = excluded.sequence, deleted = excluded.deleted,
			data = CASE WHEN excluded.deleted THEN ` + tbl + `.data ELSE excluded.data END,
			captured_at = excluded.captured_at, received_at = excluded.received_at, mutation_id = excluded.mutation_id,
			source_version = excluded.source_version, payload_version = excluded.payload_version,
			asset_sha256 = CASE WHEN excluded.deleted THEN ` + tbl + `.asset_sha256 ELSE excluded.asset_sha256 END,
			walk_gen = excluded.walk_gen
		WHERE ` + cond + `
		RETURNING restaurant_id, id`)
	args := make([]any, 0, recordArgs*len(rows))
	for _, r := range rows {
		var data any
		if r.Data != nil {
			data = string(r.Data)
		}
		args = append(args, r.restaurant, r.ID, r.Sequence, r.Deleted, data, r.CapturedAt, r.ReceivedAt,
			r.MutationID, r.SourceVersion, r.PayloadVersion, nullString(r.AssetSHA256), r.gen)
	}
	res, err := p.tx.QueryContext(ctx, upsert, args...)
	if err != nil {
		return nil, err
	}
	return scanKeys(res)
}

// deleteRecords applies tombstones in delete mode: a row goes when its
// tombstone is newer (always in a rebuild). It returns the rows it
// deleted (a record created and deleted between two syncs was never
// here).
func (p *Page) deleteRecords(ctx context.Context, tbl string, ts []keyedRecord, force bool) ([]rowKey, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	del := p.sqliteDeleteRecords
	if p.t.d.postgres {
		del = p.postgresDeleteRecords
	}
	deleted, err := del(ctx, tbl, ts, force)
	if err != nil {
		return nil, err
	}
	var out []rowKey
	for _, r := range ts {
		if k := (rowKey{r.restaurant, r.ID}); deleted[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// postgresDeleteRecords is deleteRecords in PostgreSQL: every tombstone
// in one statement, three arrays its parameters, each key found through
// the primary key whatever the planner knows (see deleteKeys).
func (p *Page) postgresDeleteRecords(ctx context.Context, tbl string, ts []keyedRecord, force bool) (map[rowKey]bool, error) {
	rs, ids, seqs := make([]string, len(ts)), make([]string, len(ts)), make([]int64, len(ts))
	for i, r := range ts {
		rs[i], ids[i], seqs[i] = r.restaurant, r.ID, r.Sequence
	}
	rows, err := p.tx.QueryContext(ctx, `DELETE FROM `+tbl+` WHERE ctid = ANY (ARRAY(
		SELECT x.ctid FROM unnest($1::text[], $2::text[], $3::bigint[]) AS k(r, id, seq)
		CROSS JOIN LATERAL (SELECT ctid FROM `+tbl+` WHERE restaurant_id = k.r AND id = k.id AND ($4::boolean OR sequence < k.seq) OFFSET 0) x))
		RETURNING restaurant_id, id`, rs, ids, seqs, force)
	if err != nil {
		return nil, err
	}
	return scanKeys(rows)
}

// tombstoneArgs is the parameters of a tombstone in SQLite's delete, and
// tombstoneChunk the tombstones of one such statement: with its one more
// parameter (force), it stays within maxArgs.
const (
	tombstoneArgs  = 3
	tombstoneChunk = (maxArgs - 1) / tombstoneArgs
)

// sqliteDeleteRecords is deleteRecords in SQLite, which binds each
// tombstone's parameters: a statement per tombstoneChunk of them.
func (p *Page) sqliteDeleteRecords(ctx context.Context, tbl string, ts []keyedRecord, force bool) (map[rowKey]bool, error) {
	deleted := map[rowKey]bool{}
	for start := 0; start < len(ts); start += tombstoneChunk {
		chunk := ts[start:min(len(ts), start+tombstoneChunk)]
		args := make([]any, 0, tombstoneArgs*len(chunk)+1)
		for _, r := range chunk {
			args = append(args, r.restaurant, r.ID, r.Sequence)
		}
		args = append(args, force)
		rows, err := p.tx.QueryContext(ctx, `DELETE FROM `+tbl+` WHERE (restaurant_id, id) IN (
			SELECT t.restaurant_id, t.id FROM (VALUES `+rowsOf("(?, ?, ?)", len(chunk))+`) AS v
			JOIN `+tbl+` AS t ON t.restaurant_id = v.column1 AND t.id = v.column2
			WHERE ? OR t.sequence < v.column3)
			RETURNING restaurant_id, id`, args...)
		if err != nil {
			return nil, err
		}
		keys, err := scanKeys(rows)
		if err != nil {
			return nil, err
		}
		maps.Copy(deleted, keys)
	}
	return deleted, nil
}

func scanKeys(rows *sql.Rows) (map[rowKey]bool, error) {
	defer rows.Close()
	out := map[rowKey]bool{}
	for rows.Next() {
		var k rowKey
		if err := rows.Scan(&k.restaurant, &k.id); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// ApplyDeliveriesOf inserts a page's deliveries of every restaurant in
// one statement (per statesChunk of them), and their typed rows in the
// same transaction; they are immutable, so a known id is left as it is,
// unless it was mirrored without receivedAt and now comes with it: then
// it is written over, and its typed rows with it (Target.completing).
// It returns how many were new (or completed), by restaurant.
func (p *Page) ApplyDeliveriesOf(ctx context.Context, streams []StreamDeliveries) (map[string]int64, error) {
	type keyed struct {
		restaurant string
		d          Delivery
	}
	var all []keyed
	seen := map[rowKey]bool{}
	for _, s := range streams {
		for _, d := range s.Deliveries {
			// A delivery named twice is written once, as first named: an
			// upsert may not meet a row its own statement wrote
			// (PostgreSQL refuses it), and the typed rows below are built
			// from the same occurrence that is stored.
			if k := (rowKey{s.Restaurant, d.ID}); !seen[k] {
				seen[k] = true
				all = append(all, keyed{s.Restaurant, d})
			}
		}
	}
	counts := map[string]int64{}
	var inserted []keyedInput
	for start := 0; start < len(all); start += statesChunk {
		chunk := all[start:min(len(all), start+statesChunk)]
		args := make([]any, 0, 8*len(chunk))
		for _, k := range chunk {
			d := k.d
			args = append(args, k.restaurant, d.ID, d.OccurredAt, d.IsCompliant, d.SupplierID, d.SupplierName, d.ImageCount, string(d.Data))
		}
		rows, err := p.tx.QueryContext(ctx, p.t.d.q(`INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, image_count, data)
			VALUES `+rowsOf("(?, ?, ?, ?, ?, ?, ?, ?)", len(chunk))+` ON CONFLICT (restaurant_id, id) DO UPDATE SET data = excluded.data
			WHERE `+p.t.d.lacksReceivedAt("deliveries")+` AND NOT `+p.t.d.lacksReceivedAt("excluded")+` RETURNING restaurant_id, id`), args...)
		if err != nil {
			return counts, err
		}
		keys, err := scanKeys(rows)
		if err != nil {
			return counts, err
		}
		for _, k := range chunk {
			rk := rowKey{k.restaurant, k.d.ID}
			if keys[rk] {
				counts[k.restaurant]++
				inserted = append(inserted, keyedInput{k.restaurant, typed.Input{ID: k.d.ID, Data: k.d.Data}})
			}
		}
	}
	// Only deliveries new here have typed rows to write, and none yet;
	// while the target completes deliveries mirrored without receivedAt,
	// one written over has some, replaced.
	return counts, p.t.typed.replaceMany(ctx, p.tx, typed.DeliveriesSource, nil, inserted, !p.t.completing)
}

// replaceMany is replace for the records of many restaurants at once:
// the same statements, every restaurant's rows in each.
func (t *relations) replaceMany(ctx context.Context, tx *sql.Tx, source string, gone []rowKey, live []keyedInput, fresh bool) error {
	rels := typed.Of(source)
	if len(rels) == 0 || len(gone)+len(live) == 0 {
		return nil
	}
	if err := t.deleteKeys(ctx, tx, rels, gone); err != nil {
		return err
	}
	if !fresh && len(rels) > 1 {
		keys := make([]rowKey, len(live))
		for i, in := range live {
			keys[i] = rowKey{in.restaurant, in.in.ID}
		}
		if err := t.deleteKeys(ctx, tx, rels[1:], keys); err != nil {
			return err
		}
	}
	// typed.Rows takes one restaurant's records: a run of them at a time,
	// every run's rows sent together.
	rows := make([][][]any, len(rels))
	for start := 0; start < len(live); {
		end := start + 1
		for end < len(live) && live[end].restaurant == live[start].restaurant {
			end++
		}
		ins := make([]typed.Input, 0, end-start)
		for _, in := range live[start:end] {
			ins = append(ins, in.in)
		}
		for i, rs := range typed.Rows(rels, live[start].restaurant, ins) {
			rows[i] = append(rows[i], rs...)
		}
		start = end
	}
	for i, r := range rels {
		if err := t.insertRows(ctx, tx, r, rows[i], i == 0); err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
	}
	return nil
}

// deleteKeys removes the typed rows of the records in keys (a record's
// row and its elements' rows), a statement per relation (per maxArgs/2
// keys in SQLite).
//
// Each key must be found through the primary key, whatever the planner
// knows. Given restaurant_id = $1 AND id IN (...) on a table never
// analyzed (a mirror's first sync, or autovacuum off), PostgreSQL guesses
// that a restaurant has a few rows and reads them all, filtering the ids:
// every page then reads the whole restaurant, and a first sync turns
// quadratic (a 20,000-record collection: 52 s instead of 1). So in
// PostgreSQL each key is looked up on its own, in a LATERAL subquery that
// OFFSET 0 keeps from being flattened into a join the planner could hash,
// and the rows found are deleted by ctid. SQLite looks each key of an IN
// list up in the index anyway.
func (t *relations) deleteKeys(ctx context.Context, tx *sql.Tx, rels []*typed.Relation, keys []rowKey) error {
	if len(keys) == 0 {
		return nil
	}
	for _, r := range rels {
		if t.d.postgres {
			rs, ids := make([]string, len(keys)), make([]string, len(keys))
			for i, k := range keys {
				rs[i], ids[i] = k.restaurant, k.id
			}
			if _, err := tx.ExecContext(ctx, deleteKeysSQL(r), rs, ids); err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
			continue
		}
		for start := 0; start < len(keys); start += maxArgs / 2 {
			chunk := keys[start:min(start+maxArgs/2, len(keys))]
			args := make([]any, 0, 2*len(chunk))
			for _, k := range chunk {
				args = append(args, k.restaurant, k.id)
			}
			if _, err := tx.ExecContext(ctx, sqliteDeleteKeysSQL(r, len(chunk)), args...); err != nil {
				return fmt.Errorf("%s: %w", r.Name, err)
			}
		}
	}
	return nil
}

// keyColumn is the column of r naming the record a row is of.
func keyColumn(r *typed.Relation) string {
	if r.Parent != "" {
		return "parent_id"
	}
	return "id"
}

// deleteKeysSQL is deleteKeys's statement for r in PostgreSQL: the
// restaurants and the keys, two arrays of the same length, its
// parameters.
func deleteKeysSQL(r *typed.Relation) string {
	return `DELETE FROM ` + r.Name + ` WHERE ctid = ANY (ARRAY(
		SELECT x.ctid FROM unnest($1::text[], $2::text[]) AS k(r, key)
		CROSS JOIN LATERAL (SELECT ctid FROM ` + r.Name + ` WHERE restaurant_id = k.r AND ` + keyColumn(r) + ` = k.key OFFSET 0) x))`
}

// sqliteDeleteKeysSQL is deleteKeys's statement for r in SQLite: n pairs
// of a restaurant and a key its parameters.
func sqliteDeleteKeysSQL(r *typed.Relation, n int) string {
	return `DELETE FROM ` + r.Name + ` WHERE (restaurant_id, ` + keyColumn(r) + `) IN (VALUES ` + rowsOf("(?, ?)", n) + `)`
}
