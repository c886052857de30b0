package targets

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// Snapshot reads the typed relations of a target as of one moment: every
// read inside one transaction, read only (repeatable read in PostgreSQL;
// SQLite's reads in a transaction see one state of the database), so what
// is read of one relation agrees with what is read of another.
type Snapshot struct {
	q querier
	t *Target
}

// Snapshot runs f on a snapshot of the target.
func (t *Target) Snapshot(ctx context.Context, f func(*Snapshot) error) error {
	var opts *sql.TxOptions
	if t.d.postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := t.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read only
	return f(&Snapshot{q: tx, t: t})
}

// Holds reports, by name, the typed relations the target holds (a
// collection it does not mirror has none).
func (s *Snapshot) Holds(ctx context.Context) (map[string]bool, error) {
	held, err := s.t.typed.recorded(ctx, s.q, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(held))
	for name := range held {
		out[name] = true
	}
	return out, nil
}

// Rows reads every row of r in key order and hands each to f as Go values
// (string, int64, float64, bool, time.Time, or nil), the same whichever
// the target; f may keep none of them past its call.
func (s *Snapshot) Rows(ctx context.Context, r *typed.Relation, f func([]any) error) (int64, error) {
	var names []string
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	rows, err := s.q.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+r.Name+` ORDER BY `+strings.Join(r.KeyColumns(), ", "))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cells := make([]any, len(r.Columns))
	for i, c := range r.Columns {
		cells[i] = s.t.d.scanCell(c)
	}
	var n int64
	row := make([]any, len(r.Columns))
	for rows.Next() {
		if err := rows.Scan(cells...); err != nil {
			return n, err
		}
		for i, c := range r.Columns {
			if row[i], err = cellValue(c, cells[i]); err != nil {
				return n, err
			}
		}
		if err := f(row); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// scanCell is where a column of kind c is scanned: a time is text in
// SQLite and a timestamp in PostgreSQL.
func (d dialect) scanCell(c typed.Column) any {
	switch {
	case c.Kind == typed.Integer || c.Kind == typed.Millis:
		return new(sql.NullInt64)
	case c.Kind == typed.Number:
		return new(sql.NullFloat64)
	case c.Kind == typed.Boolean:
		return new(sql.NullBool)
	case c.Kind == typed.Time && d.postgres:
		return new(sql.NullTime)
	default:
		return new(sql.NullString)
	}
}

// cellValue is the Go value of a scanned cell (nil for NULL).
func cellValue(c typed.Column, cell any) (any, error) {
	switch v := cell.(type) {
	case *sql.NullInt64:
		if v.Valid {
			return v.Int64, nil
		}
	case *sql.NullFloat64:
		if v.Valid {
			return v.Float64, nil
		}
	case *sql.NullBool:
		if v.Valid {
			return v.Bool, nil
		}
	case *sql.NullTime:
		if v.Valid {
			return v.Time.UTC(), nil
		}
	case *sql.NullString:
		if !v.Valid {
			return nil, nil
		}
		if c.Kind != typed.Time {
			return v.String, nil
		}
		at, err := time.Parse(typed.TimeText, strings.TrimSpace(v.String))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		return at, nil
	}
	return nil, nil
}
