package targets

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// conn is the target's database and the dialect its statements are
// written in: what every part of the target shares.
type conn struct {
	db *sql.DB
	d  dialect
}

// tx runs f in one transaction of the target.
func (c *conn) tx(ctx context.Context, f func(*sql.Tx) error) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// strings runs a query of one text column (? placeholders).
func (c *conn) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := c.db.QueryContext(ctx, c.d.q(query), args...)
	if err != nil {
		return nil, err
	}
	return scanStrings(rows)
}

// tableExists reports whether the target has a table of that name.
func (c *conn) tableExists(ctx context.Context, name string) (bool, error) {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
	if c.d.postgres {
		q = `SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = ?`
	}
	var n int
	err := c.db.QueryRowContext(ctx, c.d.q(q), name).Scan(&n)
	return n > 0, err
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

// execer is a transaction or the database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// querier runs statements inside a transaction or on the database.
type querier interface {
	execer
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
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

// quotedTable is a collection's table as a quoted identifier, for SQL: a
// collection named like a keyword (order, group) still names its table.
func quotedTable(collection string) string { return `"` + typed.TableName(collection) + `"` }

// collectionName is what a collection name must look like to become a
// table name (the server's 24 all do).
var collectionName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// reservedTables are the mirror's own tables, which no collection's table
// may take.
var reservedTables = map[string]bool{"sync_state": true, "deliveries": true, "files": true, "file_links": true, "mirror_meta": true,
	"stream_heads": true, "typed_relations": true}

// TableAllowed reports whether a collection's table may be made: not one
// of the mirror's own, not one of the typed layer's names.
func TableAllowed(collection string) bool {
	t := typed.TableName(collection)
	return collectionName.MatchString(collection) && !reservedTables[t] && !strings.HasPrefix(t, typed.Prefix)
}
