// Package targets holds the databases foodsafe-sync keeps a mirror in:
// SQLite (the embedded default) or PostgreSQL. Both speak the same SQL here except for a few
// column types and the placeholder style, which dialect covers; every
// statement is written once. It keeps the mirror's own tables (what each
// stream is mirrored up to, the files), a table per collection and the
// deliveries, and the typed relations (internal/mirror/typed) in step with
// them; it knows nothing of the API the pages come from.
//
// A Target is opened (Open, OpenExisting), locked for a run (Lock), and
// written a page at a time (Update: one transaction per Page); Streams
// reads and keeps what each stream is mirrored up to, Files the downloaded
// files, Status and Snapshot read it back.
package targets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for postgres targets
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go (no cgo)

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// Target is a mirror's database, opened.
type Target struct {
	*conn
	// Streams is what the target keeps of each stream and of the key-wide
	// listings; Files the downloaded files and what links to them.
	Streams *Streams
	Files   *Files
	typed   *relations
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
	// completing: the target holds deliveries mirrored without
	// receivedAt (by an earlier release, or from a server that did not
	// send it), which ApplyDeliveries completes when they come again.
	completing bool
}

// ErrTarget marks a TARGET that cannot be meant (exit status 2).
var ErrTarget = errors.New("bad target")

// Open opens "sqlite:PATH" or a "postgres://" URL and creates the
// mirror's schema if it is missing. sqlite files are created on first use.
func Open(ctx context.Context, spec string) (*Target, error) {
	return open(ctx, spec, true)
}

// OpenExisting opens a mirror that foodsafe-sync made, upgrading it
// to this release if need be; anything else (no such file or database,
// a database that is no mirror) is ErrTarget, and nothing is created.
func OpenExisting(ctx context.Context, spec string) (*Target, error) {
	return open(ctx, spec, false)
}

func open(ctx context.Context, spec string, create bool) (*Target, error) {
	var t *Target
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
		t = newTarget(&conn{db: db}, "sqlite:"+path)
		t.path = path
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		db, err := sql.Open("pgx", spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTarget, err)
		}
		db.SetMaxOpenConns(3) // one may hold the run's advisory lock
		t = newTarget(&conn{db: db, d: dialect{postgres: true}}, redactURL(spec))
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
		if v, err := t.schema().existingVersion(ctx); err != nil || v == 0 {
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
	if err := t.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM deliveries WHERE `+t.d.lacksReceivedAt("deliveries")+`)`).Scan(&t.completing); err != nil {
		t.db.Close()
		return nil, fmt.Errorf("%s: %w", t.Where, err)
	}
	return t, nil
}

// newTarget assembles a target's parts around its connection.
func newTarget(c *conn, where string) *Target {
	return &Target{conn: c, Streams: &Streams{c}, Files: &Files{c}, typed: &relations{c}, Where: where}
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
	if !t.d.postgres {
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
		// Unlocked by statement: closing the connection releases the lock
		// only when the server's backend has ended, which may be after
		// Close returns, so a target opened again at once could find the
		// lock still held. Errors are left to the connection's end.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = t.lockConn.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtext('foodsafe-sync'))`)
		cancel()
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

// migrate creates what is missing, upgrades a target made by an earlier
// release, and brings its typed relations to this release's definition.
// Collection tables are created when a stream is first synced (only the
// collections the key reads exist). Whatever changes tables a sync
// writes is done under the target's lock.
func (t *Target) migrate(ctx context.Context) error {
	if err := t.schema().create(ctx); err != nil {
		return err
	}
	version, err := t.schema().recordedVersion(ctx)
	if err != nil {
		return err
	}
	stale, orphans, err := t.typed.work(ctx)
	if err != nil {
		return err
	}
	if version == schemaVersion && len(stale) == 0 && len(orphans) == 0 {
		return nil
	}
	return t.upgrade(ctx)
}

// upgrade brings an older target to this release and its typed relations
// to their current definitions. Upgrading rewrites tables a running sync
// writes: only one process at a time, and never beside a sync of another
// release.
func (t *Target) upgrade(ctx context.Context) error {
	if t.lockFile == nil && t.lockConn == nil {
		if err := t.Lock(ctx); err != nil {
			if errors.Is(err, ErrBusy) {
				return errUpgradeBusy
			}
			return err
		}
		defer t.unlock()
	}
	version, err := t.schema().version(ctx) // another run may have upgraded it meanwhile
	if err != nil {
		return err
	}
	if version == 1 {
		if err := t.tx(ctx, func(tx *sql.Tx) error { return t.schema().upgradeFrom1(ctx, tx) }); err != nil {
			return fmt.Errorf("upgrading the target from schema version 1: %w", err)
		}
		version = 2
	}
	if version == 2 {
		if err := t.tx(ctx, func(tx *sql.Tx) error { return t.schema().upgradeFrom2(ctx, tx) }); err != nil {
			return fmt.Errorf("upgrading the target from schema version 2: %w", err)
		}
	}
	stale, orphans, err := t.typed.work(ctx)
	if err != nil {
		return err
	}
	return t.typed.reconcile(ctx, stale, orphans)
}

// EnsureCollection creates a collection's table and its typed relations
// if they are missing, in one transaction, so nobody ever sees the one
// without the others. A page of a collection is applied only after it.
func (t *Target) EnsureCollection(ctx context.Context, collection string) error {
	if t.ready[collection] {
		return nil
	}
	err := t.tx(ctx, func(tx *sql.Tx) error {
		for _, s := range t.d.collectionTableSQL(typed.TableName(collection)) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		ok, err := t.typed.current(ctx, tx, collection)
		if err != nil || ok {
			return err
		}
		return t.typed.rebuild(ctx, tx, collection)
	})
	if err != nil {
		return fmt.Errorf("creating table %s: %w", typed.TableName(collection), err)
	}
	if t.ready == nil {
		t.ready = map[string]bool{}
	}
	t.ready[collection] = true
	return nil
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
		_, err = tx.ExecContext(ctx, t.d.q(`INSERT INTO mirror_meta (name, value) VALUES ('tombstones', ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`), want)
		return err
	})
}

// Update runs f in one transaction of the target: a page and the position
// that follows it are written together, or neither is.
func (t *Target) Update(ctx context.Context, f func(*Page) error) error {
	return t.tx(ctx, func(tx *sql.Tx) error { return f(&Page{tx: tx, t: t}) })
}

// schema is the target's own tables, for creating and upgrading them.
func (t *Target) schema() schema { return schema{t.conn} }
