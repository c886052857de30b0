package targets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// schema creates the mirror's own tables and upgrades those an earlier
// release made.
type schema struct{ *conn }

// schemaVersion is bumped when the schema below changes; the target keeps
// it in mirror_meta. Version 1 kept sequences and heads as digit strings
// (text, which sorts 99 after 180); version 2 keeps them as numbers and
// adds the typed layer; version 3 holds each delivery's receivedAt, which
// the API did not send before (typed_deliveries.received_at). A target
// of an earlier version is upgraded in place when it is opened
// (upgradeFrom1, upgradeFrom2).
const schemaVersion = 3

// existingVersion is the schema version of a target that may not be a
// mirror at all (0: it is not).
func (sc schema) existingVersion(ctx context.Context) (int, error) {
	ok, err := sc.tableExists(ctx, "mirror_meta")
	if err != nil || !ok {
		return 0, err
	}
	return sc.version(ctx)
}

// create creates the mirror's own tables where they are missing.
func (sc schema) create(ctx context.Context) error {
	jsonType, boolFalse := "TEXT", "0"
	if sc.d.postgres {
		jsonType, boolFalse = "JSONB", "false"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS mirror_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS sync_state (
			restaurant_id  TEXT NOT NULL,
			stream         TEXT NOT NULL,
			changes_cursor TEXT,
			walk_cursor    TEXT,
			walk_kind      TEXT,
			walk_gen       BIGINT NOT NULL DEFAULT 0,
			window_from    BIGINT,
			window_to      BIGINT,
			pass_to        BIGINT,
			covered_to     BIGINT,
			high_water     BIGINT,
			pages          BIGINT NOT NULL DEFAULT 0,
			applied        BIGINT NOT NULL DEFAULT 0,
			last_synced_at BIGINT,
			last_error     TEXT,
			PRIMARY KEY (restaurant_id, stream))`,
		`CREATE TABLE IF NOT EXISTS deliveries (
			restaurant_id TEXT NOT NULL,
			id            TEXT NOT NULL,
			occurred_at   BIGINT NOT NULL,
			is_compliant  BOOLEAN NOT NULL,
			supplier_id   TEXT NOT NULL,
			supplier_name TEXT NOT NULL,
			image_count   BIGINT NOT NULL,
			data          ` + jsonType + ` NOT NULL,
			images_synced BOOLEAN NOT NULL DEFAULT ` + boolFalse + `,
			PRIMARY KEY (restaurant_id, id))`,
		`CREATE INDEX IF NOT EXISTS deliveries_occurred_idx ON deliveries (restaurant_id, occurred_at)`,
		streamHeadsSQL("stream_heads"),
		`CREATE TABLE IF NOT EXISTS files (
			sha256        TEXT PRIMARY KEY,
			content_type  TEXT NOT NULL,
			byte_length   BIGINT NOT NULL,
			path          TEXT NOT NULL,
			downloaded_at BIGINT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS file_links (
			restaurant_id TEXT NOT NULL,
			source        TEXT NOT NULL,
			parent        TEXT NOT NULL,
			item_id       TEXT NOT NULL,
			sha256        TEXT NOT NULL,
			content_type  TEXT NOT NULL,
			PRIMARY KEY (restaurant_id, source, parent, item_id))`,
		// The typed relations the target holds, each with the fingerprint
		// of the DDL that made it (Relation.definition).
		`CREATE TABLE IF NOT EXISTS typed_relations (
			name       TEXT PRIMARY KEY,
			source     TEXT NOT NULL,
			definition TEXT NOT NULL)`,
	}
	for _, s := range stmts {
		if _, err := sc.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	return nil
}

// recordedVersion is the target's schema version, recorded as this
// release's on a new target; a later release's is refused.
func (sc schema) recordedVersion(ctx context.Context) (int, error) {
	version, err := sc.version(ctx)
	if err != nil {
		return 0, err
	}
	if version == 0 {
		// A new target: create made the current version.
		if _, err := sc.db.ExecContext(ctx, sc.d.q(`INSERT INTO mirror_meta (name, value) VALUES ('schema_version', ?)
			ON CONFLICT (name) DO NOTHING`), strconv.Itoa(schemaVersion)); err != nil {
			return 0, err
		}
		if version, err = sc.version(ctx); err != nil {
			return 0, err
		}
	}
	if version > schemaVersion {
		return 0, fmt.Errorf("the target holds mirror schema version %d; this foodsafe-sync writes version %d (a later release made it)", version, schemaVersion)
	}
	return version, nil
}

// version is the target's schema version (0: none recorded yet).
func (sc schema) version(ctx context.Context) (int, error) {
	var v string
	switch err := sc.db.QueryRowContext(ctx, `SELECT value FROM mirror_meta WHERE name = 'schema_version'`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("the target holds a malformed mirror schema version %q", v)
	}
	return n, nil
}

// streamHeadsSQL is the table of the head each stream was listed at by
// GET /v1/changes when it was last mirrored up to it (the changes
// position itself is kept in mirror_meta).
func streamHeadsSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
			restaurant_id TEXT NOT NULL,
			stream        TEXT NOT NULL,
			head          BIGINT NOT NULL,
			PRIMARY KEY (restaurant_id, stream))`
}

// collectionTableSQL is the DDL of a collection's table. sequence is a
// number: an analyst's ORDER BY sequence is the stream's order.
func (d dialect) collectionTableSQL(table string) []string {
	jsonType := "TEXT"
	if d.postgres {
		jsonType = "JSONB"
	}
	return []string{
		`CREATE TABLE IF NOT EXISTS "` + table + `" (
			restaurant_id   TEXT NOT NULL,
			id              TEXT NOT NULL,
			sequence        BIGINT NOT NULL,
			deleted         BOOLEAN NOT NULL,
			data            ` + jsonType + `,
			captured_at     BIGINT NOT NULL,
			received_at     BIGINT NOT NULL,
			mutation_id     TEXT NOT NULL,
			source_version  TEXT,
			payload_version INTEGER NOT NULL,
			asset_sha256    TEXT,
			walk_gen        BIGINT NOT NULL DEFAULT 0,
			PRIMARY KEY (restaurant_id, id))`,
		`CREATE INDEX IF NOT EXISTS "` + table + `_asset_idx" ON "` + table + `" (asset_sha256)`,
	}
}

// collectionColumns are a collection table's columns, in order.
const collectionColumns = `restaurant_id, id, sequence, deleted, data, captured_at, received_at, mutation_id, source_version, payload_version, asset_sha256, walk_gen`

// upgradeFrom1 turns a version-1 target into version 2 inside tx: every
// collection table's sequence and stream_heads' head become numbers
// (PostgreSQL alters the column; SQLite, which cannot, copies the table).
// A value that is not a number of 64 bits fails the upgrade, and nothing
// is changed. The typed relations are built afterwards, as for any target
// whose relations are missing.
func (sc schema) upgradeFrom1(ctx context.Context, tx *sql.Tx) error {
	tables, err := sc.textSequenceTables(ctx, tx)
	if err != nil {
		return err
	}
	for _, tbl := range tables {
		if err := sc.retypeAsNumber(ctx, tx, tbl, "sequence", sc.d.collectionTableSQL, collectionColumns); err != nil {
			return err
		}
	}
	heads := func(name string) []string { return []string{streamHeadsSQL(`"` + name + `"`)} }
	if err := sc.retypeAsNumber(ctx, tx, "stream_heads", "head", heads, "restaurant_id, stream, head"); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE mirror_meta SET value = '2' WHERE name = 'schema_version'`)
	return err
}

// upgradeFrom2 turns a version-2 target into version 3 inside tx: the
// deliveries stream of every restaurant holding a delivery mirrored
// without receivedAt (the API did not send it) is read again from its
// first delivery on the next run (marked unfinished, its cursors
// cleared), and ApplyDeliveries completes each such delivery as it comes
// again (Target.completing); the typed relations, whose definition
// changed, are rebuilt afterwards. Once: a server that does not send
// receivedAt either is not asked again.
func (sc schema) upgradeFrom2(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `UPDATE sync_state SET changes_cursor = NULL, walk_cursor = NULL, walk_kind = NULL,
			last_error = 'reading every delivery again for its receivedAt (foodsafe-sync upgrade)'
		WHERE stream = 'deliveries' AND EXISTS (SELECT 1 FROM deliveries d
			WHERE d.restaurant_id = sync_state.restaurant_id AND `+sc.d.lacksReceivedAt("d")+`)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, sc.d.q(`UPDATE mirror_meta SET value = ? WHERE name = 'schema_version'`), strconv.Itoa(schemaVersion))
	return err
}

// lacksReceivedAt is the condition that the delivery of table alias (or
// name) holds no receivedAt: mirrored from a server that did not send it.
func (d dialect) lacksReceivedAt(table string) string {
	if d.postgres {
		return `(` + table + `.data->>'receivedAt' IS NULL)`
	}
	return `(json_extract(` + table + `.data, '$.receivedAt') IS NULL)`
}

// textSequenceTables are the collection tables whose sequence is text.
func (sc schema) textSequenceTables(ctx context.Context, tx *sql.Tx) ([]string, error) {
	if sc.d.postgres {
		rows, err := tx.QueryContext(ctx, `SELECT table_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND column_name = 'sequence' AND data_type = 'text' ORDER BY table_name`)
		if err != nil {
			return nil, err
		}
		return scanStrings(rows)
	}
	rows, err := tx.QueryContext(ctx, `SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c
		WHERE m.type = 'table' AND c.name = 'sequence' AND upper(c.type) = 'TEXT' ORDER BY m.name`)
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// retypeAsNumber makes column col of table a BIGINT. In SQLite the table
// is made again by ddl (given the table's name) and the rows copied,
// columns being its column list.
func (sc schema) retypeAsNumber(ctx context.Context, tx *sql.Tx, table, col string, ddl func(string) []string, columns string) error {
	var bad int
	// A digit string beyond 64 bits: PostgreSQL's cast refuses it, SQLite's would saturate.
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`" WHERE NOT (length(`+col+`) BETWEEN 1 AND 19)
		OR CAST(CAST(`+col+` AS BIGINT) AS TEXT) <> `+col).Scan(&bad); err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d rows hold a %s that is not a number of 64 bits", table, bad, col)
	}
	if sc.d.postgres {
		_, err := tx.ExecContext(ctx, `ALTER TABLE "`+table+`" ALTER COLUMN `+col+` TYPE BIGINT USING `+col+`::bigint`)
		return err
	}
	tmp := table + "_upgrading"
	sel := strings.Replace(columns, col, "CAST("+col+" AS INTEGER)", 1)
	stmts := []string{
		ddl(tmp)[0],
		`INSERT INTO "` + tmp + `" (` + columns + `) SELECT ` + sel + ` FROM "` + table + `"`,
		`DROP TABLE "` + table + `"`,
		`ALTER TABLE "` + tmp + `" RENAME TO "` + table + `"`,
	}
	stmts = append(stmts, ddl(table)[1:]...) // its indexes, under their own names
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}
