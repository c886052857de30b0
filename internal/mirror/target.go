package mirror

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for postgres targets
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go (no cgo)
)

// Target is the mirror's database: SQLite (the embedded default) or
// PostgreSQL. Both speak the same SQL here except for a few column types
// and the placeholder style, which dialect covers; every statement is
// written once.
type Target struct {
	db      *sql.DB
	dialect dialect
	// lock is held for the whole run (see Lock): a lock file next to a
	// SQLite database, or the connection holding a PostgreSQL advisory
	// lock.
	lockFile *os.File
	lockConn *sql.Conn
	// Where says what the target is, without credentials, for messages.
	Where string
	path  string // the SQLite file
	// ready are the collections whose table and typed relations this
	// process has made sure of.
	ready map[string]bool
}

type dialect struct {
	postgres bool
}

// q rewrites ? placeholders to $n for PostgreSQL. Statements here never
// contain a literal question mark.
func (d dialect) q(s string) string {
	if !d.postgres {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ErrTarget marks a TARGET that cannot be meant (exit status 2).
var ErrTarget = errors.New("bad target")

// OpenTarget opens "sqlite:PATH" or a "postgres://" URL and creates the
// mirror's schema if it is missing. sqlite files are created on first use.
func OpenTarget(ctx context.Context, spec string) (*Target, error) {
	return openTarget(ctx, spec, true)
}

// OpenExistingTarget opens a mirror that foodsafe-sync made, upgrading it
// to this release if need be; anything else (no such file or database,
// a database that is no mirror) is ErrTarget, and nothing is created.
func OpenExistingTarget(ctx context.Context, spec string) (*Target, error) {
	return openTarget(ctx, spec, false)
}

func openTarget(ctx context.Context, spec string, create bool) (*Target, error) {
	var t Target
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("%w: sqlite: needs a file path, e.g. sqlite:mirror.db", ErrTarget)
		}
		if _, err := os.Stat(path); !create && err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrTarget, spec, err)
		}
		// WAL lets `status` read while a sync writes; busy_timeout waits
		// for the writer instead of failing; foreign keys are unused.
		dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1) // one writer; SQLite serialises writes anyway
		t = Target{db: db, Where: "sqlite:" + path, path: path}
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		db, err := sql.Open("pgx", spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTarget, err)
		}
		db.SetMaxOpenConns(3) // one may hold the run's advisory lock
		t = Target{db: db, dialect: dialect{postgres: true}, Where: redactURL(spec)}
		if create {
			err = createDatabase(ctx, db, spec)
		} else if err = db.PingContext(ctx); isNoDatabase(err) {
			err = fmt.Errorf("%w: %v", ErrTarget, err)
		}
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", t.Where, err)
		}
	default:
		return nil, fmt.Errorf("%w: %q: give sqlite:PATH or a postgres:// URL", ErrTarget, redactURL(spec))
	}
	if !create {
		if v, err := t.existingVersion(ctx); err != nil || v == 0 {
			t.db.Close()
			if err == nil {
				err = fmt.Errorf("%w: %s is not a mirror foodsafe-sync made (it has no mirror_meta)", ErrTarget, t.Where)
			}
			return nil, err
		}
	}
	if err := t.migrate(ctx); err != nil {
		t.db.Close()
		return nil, fmt.Errorf("%s: %w", t.Where, err)
	}
	return &t, nil
}

// existingVersion is the schema version of a target that may not be a
// mirror at all (0: it is not).
func (t *Target) existingVersion(ctx context.Context) (int, error) {
	ok, err := t.tableExists(ctx, "mirror_meta")
	if err != nil || !ok {
		return 0, err
	}
	return t.version(ctx)
}

// createDatabase creates the target database when it does not exist,
// connected to the server's "postgres" database as the same role: a
// first run needs no separate createdb. A role that may not create
// databases gets ErrTarget (exit 2) saying what to do, not a driver error.
func createDatabase(ctx context.Context, db *sql.DB, spec string) error {
	err := db.PingContext(ctx)
	if !isNoDatabase(err) {
		return err // nil, or a failure that CREATE DATABASE cannot fix
	}
	var pe *pgconn.PgError
	cfg, err := pgx.ParseConfig(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrTarget, err)
	}
	name := cfg.Database
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%w: database %q does not exist, and the server's postgres database (to create it from) is out of reach: %v",
			ErrTarget, name, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	switch {
	case errors.As(err, &pe) && pe.Code == "42P04": // duplicate_database: another run created it
		return nil
	case errors.As(err, &pe) && pe.Code == "42501": // insufficient_privilege
		return fmt.Errorf("%w: database %q does not exist and role %q may not create it: create it (createdb %s) or grant the role CREATEDB",
			ErrTarget, name, cfg.User, name)
	case err != nil:
		return fmt.Errorf("creating database %q: %w", name, err)
	}
	return nil
}

// isNoDatabase reports whether err says the database does not exist.
func isNoDatabase(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "3D000" // invalid_catalog_name
}

// ErrBusy reports that another foodsafe-sync holds the target.
var ErrBusy = errors.New("another foodsafe-sync is syncing this target; one run at a time")

// Lock makes this process the target's only writer until Close. Two runs
// on one target would each be safe page by page, but a rebuild drops the
// rows its own walk did not touch, which could be rows the other run just
// wrote; so a second run is refused instead.
func (t *Target) Lock(ctx context.Context) error {
	if !t.dialect.postgres {
		f, err := os.OpenFile(t.path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return ErrBusy
			}
			return err
		}
		t.lockFile = f
		return nil
	}
	conn, err := t.db.Conn(ctx)
	if err != nil {
		return err
	}
	var ok bool
	// The key is the text's hash; the lock is the session's, released
	// when the connection closes (also when the process dies).
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtext('foodsafe-sync'))`).Scan(&ok); err != nil {
		conn.Close()
		return err
	}
	if !ok {
		conn.Close()
		return ErrBusy
	}
	t.lockConn = conn
	return nil
}

// unlock releases the lock, if held.
func (t *Target) unlock() {
	if t.lockFile != nil {
		t.lockFile.Close() // releases the flock
		t.lockFile = nil
	}
	if t.lockConn != nil {
		t.lockConn.Close()
		t.lockConn = nil
	}
}

// Close releases the lock and closes the database.
func (t *Target) Close() error {
	t.unlock()
	return t.db.Close()
}

// redactURL hides a password in a postgres URL.
func redactURL(s string) string {
	at := strings.Index(s, "@")
	scheme := strings.Index(s, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return s
	}
	userinfo := s[scheme+3 : at]
	if user, _, ok := strings.Cut(userinfo, ":"); ok {
		return s[:scheme+3] + user + ":xxxxx" + s[at:]
	}
	return s
}

// TableName is the target table of a collection: its name with hyphens
// as underscores (temperature-records -> temperature_records).
func TableName(collection string) string { return strings.ReplaceAll(collection, "-", "_") }

// quotedTable is TableName as a quoted identifier, for SQL: a collection
// named like a keyword (order, group) still names its table.
func quotedTable(collection string) string { return `"` + TableName(collection) + `"` }

// schemaVersion is bumped when the schema below changes; the target keeps
// it in mirror_meta. Version 1 kept sequences and heads as digit strings
// (text, which sorts 99 after 180); version 2 keeps them as numbers and
// adds the typed layer. A target of an earlier version is upgraded in
// place when it is opened (upgradeFrom1).
const schemaVersion = 2

// migrate creates what is missing, upgrades a target made by an earlier
// release, and brings its typed relations to this release's definition.
// Collection tables are created when a stream is first synced (only the
// collections the key reads exist). Whatever changes tables a sync
// writes is done under the target's lock.
func (t *Target) migrate(ctx context.Context) error {
	if err := t.createSchema(ctx); err != nil {
		return err
	}
	version, err := t.recordedVersion(ctx)
	if err != nil {
		return err
	}
	stale, orphans, err := t.typedWork(ctx)
	if err != nil {
		return err
	}
	if version == schemaVersion && len(stale) == 0 && len(orphans) == 0 {
		return nil
	}
	return t.upgrade(ctx)
}

// createSchema creates the mirror's own tables where they are missing.
func (t *Target) createSchema(ctx context.Context) error {
	jsonType, boolFalse := "TEXT", "0"
	if t.dialect.postgres {
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
		if _, err := t.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	return nil
}

// recordedVersion is the target's schema version, recorded as this
// release's on a new target; a later release's is refused.
func (t *Target) recordedVersion(ctx context.Context) (int, error) {
	version, err := t.version(ctx)
	if err != nil {
		return 0, err
	}
	if version == 0 {
		// A new target: createSchema made the current version.
		if _, err := t.db.ExecContext(ctx, t.dialect.q(`INSERT INTO mirror_meta (name, value) VALUES ('schema_version', ?)
			ON CONFLICT (name) DO NOTHING`), strconv.Itoa(schemaVersion)); err != nil {
			return 0, err
		}
		if version, err = t.version(ctx); err != nil {
			return 0, err
		}
	}
	if version > schemaVersion {
		return 0, fmt.Errorf("the target holds mirror schema version %d; this foodsafe-sync writes version %d (a later release made it)", version, schemaVersion)
	}
	return version, nil
}

// upgrade brings an older target to this release and its typed relations
// to their current definitions. Upgrading rewrites tables a running sync
// writes: only one process at a time, and never beside a sync of another
// release.
func (t *Target) upgrade(ctx context.Context) error {
	if t.lockFile == nil && t.lockConn == nil {
		if err := t.Lock(ctx); err != nil {
			if errors.Is(err, ErrBusy) {
				return errTypedBusy
			}
			return err
		}
		defer t.unlock()
	}
	version, err := t.version(ctx) // another run may have upgraded it meanwhile
	if err != nil {
		return err
	}
	if version == 1 {
		if err := t.tx(ctx, func(tx *sql.Tx) error { return t.upgradeFrom1(ctx, tx) }); err != nil {
			return fmt.Errorf("upgrading the target from schema version 1: %w", err)
		}
	}
	stale, orphans, err := t.typedWork(ctx)
	if err != nil {
		return err
	}
	return t.reconcileTyped(ctx, stale, orphans)
}

// version is the target's schema version (0: none recorded yet).
func (t *Target) version(ctx context.Context) (int, error) {
	var v string
	switch err := t.db.QueryRowContext(ctx, `SELECT value FROM mirror_meta WHERE name = 'schema_version'`).Scan(&v); {
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
func (t *Target) upgradeFrom1(ctx context.Context, tx *sql.Tx) error {
	tables, err := t.textSequenceTables(ctx, tx)
	if err != nil {
		return err
	}
	for _, tbl := range tables {
		if err := t.retypeAsNumber(ctx, tx, tbl, "sequence", t.dialect.collectionTableSQL, collectionColumns); err != nil {
			return err
		}
	}
	heads := func(name string) []string { return []string{streamHeadsSQL(`"` + name + `"`)} }
	if err := t.retypeAsNumber(ctx, tx, "stream_heads", "head", heads, "restaurant_id, stream, head"); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, t.dialect.q(`UPDATE mirror_meta SET value = ? WHERE name = 'schema_version'`), strconv.Itoa(schemaVersion))
	return err
}

// textSequenceTables are the collection tables whose sequence is text.
func (t *Target) textSequenceTables(ctx context.Context, tx *sql.Tx) ([]string, error) {
	if t.dialect.postgres {
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

func scanStrings(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// retypeAsNumber makes column col of table a BIGINT. In SQLite the table
// is made again by ddl (given the table's name) and the rows copied,
// columns being its column list.
func (t *Target) retypeAsNumber(ctx context.Context, tx *sql.Tx, table, col string, ddl func(string) []string, columns string) error {
	var bad int
	// A digit string beyond 64 bits: PostgreSQL's cast refuses it, SQLite's would saturate.
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`" WHERE NOT (length(`+col+`) BETWEEN 1 AND 19)
		OR CAST(CAST(`+col+` AS BIGINT) AS TEXT) <> `+col).Scan(&bad); err != nil {
		return fmt.Errorf("%s: %w", table, err)
	}
	if bad > 0 {
		return fmt.Errorf("%s: %d rows hold a %s that is not a number of 64 bits", table, bad, col)
	}
	if t.dialect.postgres {
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

// ensureCollectionTable creates a collection's table and its typed
// relations if they are missing, in one transaction, so nobody ever sees
// the one without the others.
func (t *Target) ensureCollectionTable(ctx context.Context, collection string) error {
	if t.ready[collection] {
		return nil
	}
	err := t.tx(ctx, func(tx *sql.Tx) error {
		for _, s := range t.dialect.collectionTableSQL(TableName(collection)) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		ok, err := t.typedCurrent(ctx, tx, collection)
		if err != nil || ok {
			return err
		}
		return t.rebuildTyped(ctx, tx, collection)
	})
	if err != nil {
		return fmt.Errorf("creating table %s: %w", TableName(collection), err)
	}
	if t.ready == nil {
		t.ready = map[string]bool{}
	}
	t.ready[collection] = true
	return nil
}

// StreamState is what the target remembers of one stream: a collection
// of a restaurant, or its deliveries.
type StreamState struct {
	ChangesCursor string // "" before the first complete walk
	WalkCursor    string // "" when no walk is under way
	WalkKind      string // full, changes or rebuild, while a walk is under way
	WalkGen       int64
	WindowFrom    *int64 // deliveries: the window being walked
	WindowTo      *int64
	PassTo        *int64 // deliveries: the end of the pass the window belongs to
	CoveredTo     *int64 // deliveries: the end of the last complete pass
	HighWater     *int64 // deliveries: newest stored occurredAt after the last pass
	Pages         int64
	Applied       int64
	LastSyncedAt  *int64
	LastError     string
}

// State reads a stream's state; a stream never synced has the zero state.
func (t *Target) State(ctx context.Context, restaurantID, stream string) (StreamState, error) {
	var s StreamState
	var changes, walk, kind, lastErr sql.NullString
	err := t.db.QueryRowContext(ctx, t.dialect.q(`SELECT changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error
		FROM sync_state WHERE restaurant_id = ? AND stream = ?`), restaurantID, stream).
		Scan(&changes, &walk, &kind, &s.WalkGen, &s.WindowFrom, &s.WindowTo, &s.PassTo, &s.CoveredTo, &s.HighWater, &s.Pages, &s.Applied, &s.LastSyncedAt, &lastErr)
	if errors.Is(err, sql.ErrNoRows) {
		return StreamState{}, nil
	}
	s.ChangesCursor, s.WalkCursor, s.WalkKind, s.LastError = changes.String, walk.String, kind.String, lastErr.String
	return s, err
}

// tx runs f in one transaction of the target.
func (t *Target) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// putState writes a stream's state inside tx.
func (t *Target) putState(ctx context.Context, tx execer, restaurantID, stream string, s StreamState) error {
	_, err := tx.ExecContext(ctx, t.dialect.q(`INSERT INTO sync_state (restaurant_id, stream, changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (restaurant_id, stream) DO UPDATE SET changes_cursor = excluded.changes_cursor, walk_cursor = excluded.walk_cursor,
			walk_kind = excluded.walk_kind, walk_gen = excluded.walk_gen, window_from = excluded.window_from, window_to = excluded.window_to,
			pass_to = excluded.pass_to, covered_to = excluded.covered_to, high_water = excluded.high_water, pages = excluded.pages,
			applied = excluded.applied, last_synced_at = excluded.last_synced_at, last_error = excluded.last_error`),
		restaurantID, stream, nullString(s.ChangesCursor), nullString(s.WalkCursor), nullString(s.WalkKind), s.WalkGen,
		s.WindowFrom, s.WindowTo, s.PassTo, s.CoveredTo, s.HighWater, s.Pages, s.Applied, s.LastSyncedAt, nullString(s.LastError))
	return err
}

// SetError records a stream's last failure (or clears it with "") outside
// any page transaction.
func (t *Target) SetError(ctx context.Context, restaurantID, stream, msg string) error {
	s, err := t.State(ctx, restaurantID, stream)
	if err != nil {
		return err
	}
	s.LastError = msg
	// One statement: no transaction needed (and SQLite has one connection,
	// which State above must not be waiting for).
	return t.putState(ctx, t.db, restaurantID, stream, s)
}

// SetTombstoneMode records the run's tombstone mode. Switching a target
// from mark to delete removes the rows already marked deleted (they would
// otherwise stay forever: no later tombstone is newer than theirs);
// switching back keeps what was deleted deleted.
func (t *Target) SetTombstoneMode(ctx context.Context, mode TombstoneMode) error {
	want := "mark"
	if mode == TombstoneDelete {
		want = "delete"
	}
	return t.tx(ctx, func(tx *sql.Tx) error {
		var had string
		err := tx.QueryRowContext(ctx, `SELECT value FROM mirror_meta WHERE name = 'tombstones'`).Scan(&had)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case had == want:
			return nil
		}
		if had == "mark" && want == "delete" {
			rows, err := tx.QueryContext(ctx, `SELECT DISTINCT stream FROM sync_state WHERE stream NOT IN ('deliveries', 'files')`)
			if err != nil {
				return err
			}
			var streams []string
			for rows.Next() {
				var c string
				if err := rows.Scan(&c); err != nil {
					rows.Close()
					return err
				}
				if collectionName.MatchString(c) {
					streams = append(streams, c)
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, c := range streams {
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+quotedTable(c)+` WHERE deleted`); err != nil {
					return err
				}
			}
		}
		_, err = tx.ExecContext(ctx, t.dialect.q(`INSERT INTO mirror_meta (name, value) VALUES ('tombstones', ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`), want)
		return err
	})
}

// ClearError clears a stream's recorded failure, if it has a state row.
func (t *Target) ClearError(ctx context.Context, restaurantID, stream string) error {
	_, err := t.db.ExecContext(ctx, t.dialect.q(`UPDATE sync_state SET last_error = NULL WHERE restaurant_id = ? AND stream = ?`), restaurantID, stream)
	return err
}

// execer is a transaction or the database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
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

// applyRecords writes one page's records of a collection inside tx, in one
// statement for the page's live records and marked tombstones (one round
// trip per page, not per record), and keeps the collection's typed
// relations in step in the same transaction. It and applyDeliveries are
// what every way of fetching pages goes through: the caller makes sure of
// the collection's table first (ensureCollectionTable) and writes the
// position that follows the page (putState) in the same tx. A record replaces the stored one only
// when its sequence is higher, except in a rebuild (force), where the
// server's answer replaces the copy outright; every row a rebuild touches
// carries its gen, so it can drop at the end what it did not see.
func (t *Target) applyRecords(ctx context.Context, tx *sql.Tx, restaurantID, collection string, recs []Record, mode TombstoneMode, gen int64, force bool) error {
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
			deleted, err := t.deleteRecord(ctx, tx, tbl, restaurantID, r, force)
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
	var live []typedInput
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
		upsert := t.dialect.q(`INSERT INTO ` + tbl + ` (` + collectionColumns + `)
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
		rows, err := tx.QueryContext(ctx, upsert, args...)
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
				live = append(live, typedInput{ID: r.ID, Data: r.Data, Sequence: r.Sequence, CapturedAt: r.CapturedAt, ReceivedAt: r.ReceivedAt})
			}
		}
	}
	return t.replaceTyped(ctx, tx, collection, restaurantID, gone, live, false)
}

// deleteRecord applies a tombstone in delete mode: the row goes when the
// tombstone is newer (always in a rebuild). It reports whether it did.
func (t *Target) deleteRecord(ctx context.Context, tx *sql.Tx, tbl, restaurantID string, r Record, force bool) (bool, error) {
	var seq int64
	switch err := tx.QueryRowContext(ctx, t.dialect.q(`SELECT sequence FROM `+tbl+` WHERE restaurant_id = ? AND id = ?`), restaurantID, r.ID).Scan(&seq); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil // never had it: created and deleted between two syncs
	case err != nil:
		return false, err
	}
	if !force && r.Sequence <= seq {
		return false, nil
	}
	_, err := tx.ExecContext(ctx, t.dialect.q(`DELETE FROM `+tbl+` WHERE restaurant_id = ? AND id = ?`), restaurantID, r.ID)
	return err == nil, err
}

// dropStale removes, at the end of a rebuild, the rows the rebuild's walk
// did not bring (the server no longer has them: its data was restored),
// with their typed rows.
func (t *Target) dropStale(ctx context.Context, tx *sql.Tx, restaurantID, collection string, gen int64) (int64, error) {
	rows, err := tx.QueryContext(ctx, t.dialect.q(`SELECT id FROM `+quotedTable(collection)+` WHERE restaurant_id = ? AND walk_gen < ?`), restaurantID, gen)
	if err != nil {
		return 0, err
	}
	stale, err := scanStrings(rows)
	if err != nil {
		return 0, err
	}
	if err := t.replaceTyped(ctx, tx, collection, restaurantID, stale, nil, false); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, t.dialect.q(`DELETE FROM `+quotedTable(collection)+` WHERE restaurant_id = ? AND walk_gen < ?`), restaurantID, gen)
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

// applyDeliveries inserts a page of deliveries, and their typed rows in
// the same transaction; they are immutable, so a known id is left as it
// is (deduplication on id).
func (t *Target) applyDeliveries(ctx context.Context, tx *sql.Tx, restaurantID string, ds []Delivery) (int64, error) {
	ins := t.dialect.q(`INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, image_count, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (restaurant_id, id) DO NOTHING`)
	var inserted []typedInput
	for _, d := range ds {
		res, err := tx.ExecContext(ctx, ins, restaurantID, d.ID, d.OccurredAt, d.IsCompliant, d.SupplierID, d.SupplierName, d.ImageCount, string(d.Data))
		if err != nil {
			return int64(len(inserted)), err
		}
		if k, _ := res.RowsAffected(); k > 0 {
			inserted = append(inserted, typedInput{ID: d.ID, Data: d.Data})
		}
	}
	// Only deliveries new here have typed rows to write, and none yet.
	return int64(len(inserted)), t.replaceTyped(ctx, tx, DeliveriesSource, restaurantID, nil, inserted, true)
}

// heads reads the head every stream was last mirrored up to.
func (t *Target) heads(ctx context.Context) (map[streamKey]int64, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT restaurant_id, stream, head FROM stream_heads`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[streamKey]int64{}
	for rows.Next() {
		var k streamKey
		var head int64
		if err := rows.Scan(&k.restaurant, &k.stream, &head); err != nil {
			return nil, err
		}
		out[k] = head
	}
	return out, rows.Err()
}

// putHead records that a stream is mirrored up to head (inside tx, or
// on its own given the database).
func (t *Target) putHead(ctx context.Context, tx execer, restaurantID, stream string, head int64) error {
	_, err := tx.ExecContext(ctx, t.dialect.q(`INSERT INTO stream_heads (restaurant_id, stream, head) VALUES (?, ?, ?)
		ON CONFLICT (restaurant_id, stream) DO UPDATE SET head = excluded.head`), restaurantID, stream, head)
	return err
}

// unfinished are the streams a previous run left with a walk under way or
// a failure: walked again whatever GET /v1/changes says.
func (t *Target) unfinished(ctx context.Context) (map[streamKey]bool, error) {
	rows, err := t.db.QueryContext(ctx, `SELECT restaurant_id, stream FROM sync_state
		WHERE stream <> 'files' AND (walk_cursor IS NOT NULL OR last_error IS NOT NULL OR window_from IS NOT NULL)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[streamKey]bool{}
	for rows.Next() {
		var k streamKey
		if err := rows.Scan(&k.restaurant, &k.stream); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// changesPosition is the GET /v1/changes position kept by the last
// complete run, when it mirrored the same scope ("" otherwise).
func (t *Target) changesPosition(ctx context.Context, scope string) (string, error) {
	var pos, had string
	err := t.db.QueryRowContext(ctx, `SELECT p.value, s.value FROM mirror_meta p, mirror_meta s
		WHERE p.name = 'changes_position' AND s.name = 'changes_scope'`).Scan(&pos, &had)
	if errors.Is(err, sql.ErrNoRows) || had != scope {
		return "", nil
	}
	return pos, err
}

// putChangesPosition keeps the position of the next listing and the scope
// it was listed for.
func (t *Target) putChangesPosition(ctx context.Context, scope, pos string) error {
	return t.tx(ctx, func(tx *sql.Tx) error { return t.putChangesPositionTx(ctx, tx, scope, pos) })
}

// putChangesPositionTx is putChangesPosition inside tx.
func (t *Target) putChangesPositionTx(ctx context.Context, tx execer, scope, pos string) error {
	for _, kv := range [][2]string{{"changes_position", pos}, {"changes_scope", scope}} {
		if _, err := tx.ExecContext(ctx, t.dialect.q(`INSERT INTO mirror_meta (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`), kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// now is the target's notion of the time of a sync, epoch ms.
func nowMillis() int64 { return time.Now().UnixMilli() }

// feedCursor is the cursor of a key-wide first listing (GET /v1/records)
// under way: the feed's nextCursor after its last applied page ("" when
// none is under way).
func (t *Target) feedCursor(ctx context.Context) (string, error) {
	var c string
	err := t.db.QueryRowContext(ctx, `SELECT value FROM mirror_meta WHERE name = 'feed_cursor'`).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return c, err
}

// putFeedCursor keeps the feed's cursor inside tx, with the page it
// follows ("" removes it: the listing is over, or starts over).
func (t *Target) putFeedCursor(ctx context.Context, tx execer, cursor string) error {
	if cursor == "" {
		_, err := tx.ExecContext(ctx, `DELETE FROM mirror_meta WHERE name = 'feed_cursor'`)
		return err
	}
	_, err := tx.ExecContext(ctx, t.dialect.q(`INSERT INTO mirror_meta (name, value) VALUES ('feed_cursor', ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`), cursor)
	return err
}

// restartFeed forgets a key-wide listing under way: its cursor, and the
// streams it had begun without ending them (the next feed begins them
// again with a new generation, so rows only the forgotten one brought are
// dropped when the new one ends their stream).
func (t *Target) restartFeed(ctx context.Context) error {
	return t.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sync_state SET walk_kind = NULL WHERE walk_kind IN ('feed', 'feed-new')`); err != nil {
			return err
		}
		return t.putFeedCursor(ctx, tx, "")
	})
}
