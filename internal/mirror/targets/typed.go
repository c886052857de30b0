package targets

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// relations keeps the typed relations (internal/mirror/typed) in a
// target: creates them as this release defines them, rebuilds those
// another release made, and writes a page's typed rows in the page's
// transaction.
type relations struct{ *conn }

// sqlType is a kind's column type in the target.
func (d dialect) sqlType(k typed.Kind) string {
	switch k {
	case typed.Integer, typed.Millis:
		return "BIGINT"
	case typed.Number:
		return "DOUBLE PRECISION"
	case typed.Boolean:
		return "BOOLEAN"
	case typed.Time:
		if d.postgres {
			return "TIMESTAMPTZ"
		}
		return "TEXT"
	case typed.JSON:
		if d.postgres {
			return "JSONB"
		}
		return "TEXT"
	}
	return "TEXT"
}

// indexName is an index's name, within PostgreSQL's 63 bytes.
func indexName(rel string, cols []string) string {
	name := rel + "_" + cols[len(cols)-1] + "_idx"
	if len(name) <= 63 {
		return name
	}
	h := sha256.Sum256([]byte(name))
	return name[:63-len("_idx")-9] + "_" + hex.EncodeToString(h[:4]) + "_idx"
}

// createSQL is the DDL of a relation: the table, its indexes and, in
// PostgreSQL, its comments (what \d+ and BI tools show).
func (d dialect) createSQL(r *typed.Relation) []string {
	var cols []string
	for _, c := range r.Columns {
		col := c.Name + " " + d.sqlType(c.Kind)
		if c.Key {
			col += " NOT NULL"
		}
		cols = append(cols, col)
	}
	stmts := []string{"CREATE TABLE " + r.Name + " (\n\t" + strings.Join(cols, ",\n\t") +
		",\n\tPRIMARY KEY (" + strings.Join(r.KeyColumns(), ", ") + "))"}
	for _, ix := range r.Indexes {
		stmts = append(stmts, "CREATE INDEX "+indexName(r.Name, ix)+" ON "+r.Name+" ("+strings.Join(ix, ", ")+")")
	}
	if d.postgres {
		stmts = append(stmts, "COMMENT ON TABLE "+r.Name+" IS "+sqlString(r.Description+" Kept by foodsafe-sync; do not write to it."))
		for _, c := range r.Columns {
			stmts = append(stmts, "COMMENT ON COLUMN "+r.Name+"."+c.Name+" IS "+sqlString(c.Description+" ("+c.From+")"))
		}
	}
	return stmts
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// definition fingerprints a relation's DDL: a target whose relation was
// made by another definition (another release) rebuilds it.
func (d dialect) definition(r *typed.Relation) string {
	h := sha256.Sum256([]byte(strings.Join(d.createSQL(r), ";\n")))
	return hex.EncodeToString(h[:12])
}

// current reports whether the target holds every relation of source
// as this release defines it, and nothing else for it.
func (t *relations) current(ctx context.Context, q querier, source string) (bool, error) {
	held, err := t.recorded(ctx, q, source)
	if err != nil {
		return false, err
	}
	want := map[string]string{}
	for _, r := range typed.Of(source) {
		want[r.Name] = t.d.definition(r)
	}
	if len(held) != len(want) {
		return false, nil
	}
	for name, def := range want {
		if held[name] != def {
			return false, nil
		}
	}
	return true, nil
}

// recorded is what typed_relations records for a source ("": every
// source), by relation name.
func (t *relations) recorded(ctx context.Context, q querier, source string) (map[string]string, error) {
	query, args := `SELECT name, definition FROM typed_relations`, []any{}
	if source != "" {
		query, args = query+` WHERE source = ?`, []any{source}
	}
	rows, err := q.QueryContext(ctx, t.d.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return nil, err
		}
		out[name] = def
	}
	return out, rows.Err()
}

// rebuild drops what the target holds of a source's typed relations,
// creates them as this release defines them and fills them from the
// source's mirrored rows, inside tx.
func (t *relations) rebuild(ctx context.Context, tx *sql.Tx, source string) error {
	held, err := t.recorded(ctx, tx, source)
	if err != nil {
		return err
	}
	drop := map[string]bool{}
	for name := range held {
		drop[name] = true
	}
	for _, r := range typed.Of(source) {
		drop[r.Name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(drop)) {
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+name); err != nil {
			return fmt.Errorf("dropping %s: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, t.d.q(`DELETE FROM typed_relations WHERE source = ?`), source); err != nil {
		return err
	}
	for _, r := range typed.Of(source) {
		for _, s := range t.d.createSQL(r) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("creating %s: %w", r.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, t.d.q(`INSERT INTO typed_relations (name, source, definition) VALUES (?, ?, ?)`),
			r.Name, source, t.d.definition(r)); err != nil {
			return err
		}
	}
	return t.fill(ctx, tx, source)
}

// fillBatch is how many mirrored rows a fill reads at a time: the typed
// rows of a batch are built in memory.
const fillBatch = 500

// fill writes the typed rows of every live mirrored row of a source
// (the relations are empty), reading the source's table in key order, a
// batch at a time.
func (t *relations) fill(ctx context.Context, tx *sql.Tx, source string) error {
	query := `SELECT restaurant_id, id, sequence, data, captured_at, received_at FROM ` + quotedTable(source) + `
		WHERE NOT deleted AND data IS NOT NULL AND (restaurant_id, id) > (?, ?) ORDER BY restaurant_id, id LIMIT ?`
	if source == typed.DeliveriesSource {
		query = `SELECT restaurant_id, id, 0, data, 0, 0 FROM deliveries
			WHERE (restaurant_id, id) > (?, ?) ORDER BY restaurant_id, id LIMIT ?`
	}
	query = t.d.q(query)
	lastR, lastID := "", ""
	for {
		rows, err := tx.QueryContext(ctx, query, lastR, lastID, fillBatch)
		if err != nil {
			return fmt.Errorf("reading %s: %w", source, err)
		}
		byRestaurant := map[string][]typed.Input{}
		var order []string
		n := 0
		for rows.Next() {
			var r string
			var in typed.Input
			if err := rows.Scan(&r, &in.ID, &in.Sequence, &in.Data, &in.CapturedAt, &in.ReceivedAt); err != nil {
				rows.Close()
				return err
			}
			if _, ok := byRestaurant[r]; !ok {
				order = append(order, r)
			}
			byRestaurant[r] = append(byRestaurant[r], in)
			lastR, lastID = r, in.ID
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range order {
			if err := t.replace(ctx, tx, source, r, nil, byRestaurant[r], true); err != nil {
				return err
			}
		}
		if n < fillBatch {
			return nil
		}
	}
}

// maxArgs bounds the parameters of one statement (SQLite allows 32,766,
// PostgreSQL 65,535).
const maxArgs = 30000

// replace keeps a source's typed relations in step with a page,
// inside the page's transaction: the rows of the records in gone go (and
// their elements' rows), those of live are written. A live record's own
// row is written over any it had (an upsert), its elements' rows
// replaced, unless fresh says no live record has typed rows yet (new
// deliveries, a relation being filled): each statement costs a round
// trip per page, so none is sent in vain. A source without typed
// relations (a collection this release does not know) has nothing to do.
func (t *relations) replace(ctx context.Context, tx *sql.Tx, source, restaurant string, gone []string, live []typed.Input, fresh bool) error {
	keys := make([]rowKey, len(gone))
	for i, id := range gone {
		keys[i] = rowKey{restaurant, id}
	}
	ins := make([]keyedInput, len(live))
	for i, in := range live {
		ins[i] = keyedInput{restaurant, in}
	}
	return t.replaceMany(ctx, tx, source, keys, ins, fresh)
}

// insertRows writes rows into r with multi-row INSERTs; with upsert, a
// row whose key is there already is written over.
func (t *relations) insertRows(ctx context.Context, tx *sql.Tx, r *typed.Relation, rows [][]any, upsert bool) error {
	if len(rows) == 0 {
		return nil
	}
	var names []string
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")"
	conflict := ""
	if upsert {
		var set []string
		for _, c := range r.Columns {
			if !c.Key {
				set = append(set, c.Name+" = excluded."+c.Name)
			}
		}
		conflict = " ON CONFLICT (" + strings.Join(r.KeyColumns(), ", ") + ") DO NOTHING"
		if len(set) > 0 {
			conflict = " ON CONFLICT (" + strings.Join(r.KeyColumns(), ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
		}
	}
	per := max(1, maxArgs/len(names))
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		args := make([]any, 0, len(chunk)*len(names))
		for _, row := range chunk {
			for _, v := range row {
				args = append(args, t.d.sqlArg(v))
			}
		}
		stmt := `INSERT INTO ` + r.Name + ` (` + strings.Join(names, ", ") + `) VALUES ` +
			strings.TrimSuffix(strings.Repeat(one+", ", len(chunk)), ", ") + conflict
		if _, err := tx.ExecContext(ctx, t.d.q(stmt), args...); err != nil {
			return err
		}
	}
	return nil
}

// work lists the sources whose typed relations are not this
// release's, and the recorded relations no source of this release owns
// any more. The sources are those this release knows whose table the
// target holds (the deliveries always).
func (t *relations) work(ctx context.Context) (stale []string, orphans []string, err error) {
	held, err := t.recorded(ctx, t.db, "")
	if err != nil {
		return nil, nil, err
	}
	known := map[string]bool{}
	for _, src := range typed.Sources() {
		for _, r := range typed.Of(src) {
			known[r.Name] = true
		}
		exists, err := t.tableExists(ctx, typed.TableName(src))
		if err != nil {
			return nil, nil, err
		}
		if !exists {
			continue
		}
		ok, err := t.current(ctx, t.db, src)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			stale = append(stale, src)
		}
	}
	for name := range held {
		if !known[name] {
			orphans = append(orphans, name)
		}
	}
	slices.Sort(orphans)
	return stale, orphans, nil
}

// reconcile brings the typed layer of every mirrored source to this
// release's definition: relations another release made are rebuilt from
// the mirrored rows (one transaction per source), relations no longer
// defined are dropped. The caller holds the target's lock.
func (t *relations) reconcile(ctx context.Context, stale, orphans []string) error {
	for _, name := range orphans {
		err := t.tx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+name); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, t.d.q(`DELETE FROM typed_relations WHERE name = ?`), name)
			return err
		})
		if err != nil {
			return fmt.Errorf("dropping %s: %w", name, err)
		}
	}
	for _, src := range stale {
		if err := t.tx(ctx, func(tx *sql.Tx) error { return t.rebuild(ctx, tx, src) }); err != nil {
			return fmt.Errorf("building the typed relations of %s: %w", src, err)
		}
	}
	return nil
}

// errUpgradeBusy is why a target that needs upgrading was not upgraded.
var errUpgradeBusy = errors.New("the target needs upgrading to this release (its schema or its typed relations are another release's) " +
	"and another foodsafe-sync holds it: run this command again once that one has finished, or stop it")

// sqlArg is a row value as the target's driver takes it: SQLite holds a
// Time as text (typed.TimeText).
func (d dialect) sqlArg(v any) any {
	if t, ok := v.(time.Time); ok && !d.postgres {
		return t.Format(typed.TimeText)
	}
	return v
}
