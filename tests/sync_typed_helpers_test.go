package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// What the tests of the typed relations and of the export hold the
// mirror to: the server's own records, read from its database and turned
// into typed rows here, independently of the mirror's code (only the
// relations' shapes, typed.Relations, are shared: their coverage of
// the schemas is tested in internal/mirror/typed).

// isoMillis is how every engine's instants are compared.
const isoMillis = "2006-01-02T15:04:05.000Z"

// nullCell is how a null cell reads in a normalised row.
const nullCell = "NULL"

// cellOf normalises a value read from PostgreSQL, SQLite or DuckDB's JSON
// for a column of kind k, so the three compare as text.
func cellOf(t testing.TB, k typed.Kind, v any) string {
	t.Helper()
	switch v := v.(type) {
	case nil:
		return nullCell
	case []byte:
		return cellOf(t, k, string(v))
	case time.Time:
		return v.UTC().Format(isoMillis)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		if k == typed.Boolean {
			return strconv.FormatBool(v != 0)
		}
		if k == typed.Number {
			return strconv.FormatFloat(float64(v), 'g', -1, 64)
		}
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case json.Number:
		f, err := v.Float64()
		require.NoError(t, err)
		return cellOf(t, k, f)
	case string:
		if k == typed.JSON {
			return canonicalJSON(t, v)
		}
		return v
	}
	require.Failf(t, "an unexpected value", "%T %v", v, v)
	return ""
}

// canonicalJSON is a JSON text with members sorted and numbers as
// doubles: jsonb rewrites both.
func canonicalJSON(t testing.TB, s string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// recipeCell normalises a recipe's answer cell, whose type only the value
// says.
func recipeCell(t testing.TB, v any) string {
	t.Helper()
	if f, ok := v.(float64); ok {
		return cellOf(t, typed.Number, f)
	}
	return cellOf(t, typed.Text, v)
}

// served is a record (or a delivery) as the server holds it.
type served struct {
	id                               string
	data                             []byte
	sequence, capturedAt, receivedAt int64
}

// serverLive reads the live records of every collection of a restaurant,
// and its deliveries (under "deliveries"), from the server's tables.
func serverLive(t testing.TB, a *app, restaurant string) map[string][]served {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	out := map[string][]served{}
	rows, err := conn.Query(ctx, `SELECT collection, record_id, data::text, sequence, captured_at, received_at
		FROM records WHERE restaurant_id = $1 AND NOT deleted`, restaurant)
	require.NoError(t, err)
	for rows.Next() {
		var c string
		var s served
		require.NoError(t, rows.Scan(&c, &s.id, &s.data, &s.sequence, &s.capturedAt, &s.receivedAt))
		out[c] = append(out[c], s)
	}
	require.NoError(t, rows.Err())
	drows, err := conn.Query(ctx, `SELECT id, occurred_at, is_compliant, supplier_id, supplier_name, temperature_records::text,
		non_compliance_reasons, corrective_actions, commentary, image_count,
		greatest(floor(extract(epoch FROM received_at) * 1000)::bigint, occurred_at) FROM deliveries WHERE restaurant_id = $1`, restaurant)
	require.NoError(t, err)
	for drows.Next() {
		var d struct {
			ID                   string          `json:"id"`
			OccurredAt           int64           `json:"-"`
			OccurredAtText       string          `json:"occurredAt"`
			IsCompliant          bool            `json:"isCompliant"`
			Supplier             map[string]any  `json:"supplier"`
			TemperatureRecords   json.RawMessage `json:"temperatureRecords"`
			NonComplianceReasons []string        `json:"nonComplianceReasons"`
			CorrectiveActions    []string        `json:"correctiveActions"`
			Commentary           *string         `json:"commentary"`
			ImageCount           int64           `json:"imageCount"`
			ReceivedAt           int64           `json:"-"`
			ReceivedAtText       string          `json:"receivedAt"`
		}
		var supID, supName, temps string
		require.NoError(t, drows.Scan(&d.ID, &d.OccurredAt, &d.IsCompliant, &supID, &supName, &temps,
			&d.NonComplianceReasons, &d.CorrectiveActions, &d.Commentary, &d.ImageCount, &d.ReceivedAt))
		d.OccurredAtText = strconv.FormatInt(d.OccurredAt, 10)
		d.ReceivedAtText = strconv.FormatInt(d.ReceivedAt, 10)
		d.Supplier = map[string]any{"id": supID, "name": supName}
		d.TemperatureRecords = json.RawMessage(temps)
		b, err := json.Marshal(d)
		require.NoError(t, err)
		out["deliveries"] = append(out["deliveries"], served{id: d.ID, data: b})
	}
	require.NoError(t, drows.Err())
	return out
}

// lookup is the member of a decoded JSON value at a dotted path.
func lookup(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// expectedCell is what a column holds for a JSON value, by the rules of
// the guide: integers whatever their number form, timestamps as the UTC
// instant (up to year 9999) and as epoch milliseconds.
func expectedCell(t testing.TB, k typed.Kind, v any) string {
	t.Helper()
	if v == nil {
		return nullCell
	}
	switch k {
	case typed.Text:
		return v.(string)
	case typed.Boolean:
		return strconv.FormatBool(v.(bool))
	case typed.Number:
		f, err := v.(json.Number).Float64()
		require.NoError(t, err)
		return strconv.FormatFloat(f, 'g', -1, 64)
	case typed.Integer:
		f, err := v.(json.Number).Float64()
		require.NoError(t, err)
		require.Equal(t, math.Trunc(f), f)
		return strconv.FormatInt(int64(f), 10)
	case typed.Time, typed.Millis:
		ms, err := strconv.ParseInt(v.(string), 10, 64)
		require.NoError(t, err)
		if k == typed.Millis {
			return strconv.FormatInt(ms, 10)
		}
		return time.UnixMilli(ms).UTC().Format(isoMillis)
	case typed.JSON:
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return canonicalJSON(t, string(b))
	}
	require.Failf(t, "kind", "%d", k)
	return ""
}

func decodeNumbers(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v), "%s", b)
	return v
}

// expectedTyped is every typed relation's rows for a restaurant, made
// from the server's live records, each row's cells normalised, rows
// sorted.
func expectedTyped(t testing.TB, live map[string][]served, restaurant string) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	for _, r := range typed.Relations() {
		rows := [][]string{}
		for _, s := range live[r.Source] {
			data := decodeNumbers(t, s.data)
			envelope := func(c typed.Column, ms int64) string {
				if c.Kind == typed.Millis {
					return strconv.FormatInt(ms, 10)
				}
				return time.UnixMilli(ms).UTC().Format(isoMillis)
			}
			row := func(elem any, ordinal int) []string {
				var cells []string
				for _, c := range r.Columns {
					switch {
					case c.Name == "restaurant_id":
						cells = append(cells, restaurant)
					case c.Name == "id" || c.Name == "parent_id":
						cells = append(cells, s.id)
					case r.Parent != "" && c.Name == "ordinal":
						cells = append(cells, strconv.Itoa(ordinal))
					case c.From == "sequence":
						cells = append(cells, strconv.FormatInt(s.sequence, 10))
					case c.From == "capturedAt":
						cells = append(cells, envelope(c, s.capturedAt))
					case c.From == "receivedAt":
						cells = append(cells, envelope(c, s.receivedAt))
					default:
						path := strings.TrimPrefix(strings.TrimPrefix(c.From, "data"), ".")
						if r.Parent != "" {
							path = strings.TrimPrefix(strings.TrimPrefix(c.From, "data."+r.Array+"[]"), ".")
						}
						v, _ := lookup(elem, path)
						cells = append(cells, expectedCell(t, c.Kind, v))
					}
				}
				return cells
			}
			if r.Parent == "" {
				rows = append(rows, row(data, 0))
				continue
			}
			elems, _ := lookup(data, r.Array)
			list, _ := elems.([]any)
			for i, e := range list {
				rows = append(rows, row(e, i+1))
			}
		}
		sortRows(rows)
		out[r.Name] = rows
	}
	return out
}

func sortRows(rows [][]string) {
	slices.SortFunc(rows, func(a, b []string) int { return slices.Compare(a, b) })
}

// typedRows reads a typed relation of a restaurant from a target, every
// column by its name unquoted, normalised and sorted.
func typedRows(t testing.TB, db *sql.DB, q func(string) string, r *typed.Relation, restaurant string) [][]string {
	t.Helper()
	var names []string
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	query, args := `SELECT `+strings.Join(names, ", ")+` FROM `+r.Name, []any{}
	if slices.Contains(names, "restaurant_id") {
		query, args = query+` WHERE restaurant_id = ?`, []any{restaurant}
	}
	rows, err := db.Query(q(query), args...)
	require.NoError(t, err, r.Name)
	defer rows.Close()
	out := [][]string{}
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = cellOf(t, r.Columns[i].Kind, v)
		}
		out = append(out, cells)
	}
	require.NoError(t, rows.Err())
	sortRows(out)
	return out
}

// requireTypedEqual holds every typed relation of a target to the
// server's live records of the restaurant, cell by cell, and each
// column's declared type to its kind; in SQLite, where a declared type is
// advice, each value's storage class too.
func requireTypedEqual(t testing.TB, a *app, target, restaurant string) {
	t.Helper()
	db, q := openTarget(t, target)
	want := expectedTyped(t, serverLive(t, a, restaurant), restaurant)
	postgres := !strings.HasPrefix(target, "sqlite:")
	declared := map[typed.Kind][2]string{
		typed.Text: {"text", "TEXT"}, typed.Integer: {"bigint", "BIGINT"}, typed.Millis: {"bigint", "BIGINT"},
		typed.Number: {"double precision", "DOUBLE PRECISION"}, typed.Boolean: {"boolean", "BOOLEAN"},
		typed.Time: {"timestamp with time zone", "TEXT"}, typed.JSON: {"jsonb", "TEXT"},
	}
	storage := map[typed.Kind]string{typed.Text: "text", typed.Integer: "integer", typed.Millis: "integer",
		typed.Number: "real", typed.Boolean: "integer", typed.Time: "text", typed.JSON: "text"}
	for _, r := range typed.Relations() {
		var cols [][2]string
		query := `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`
		if postgres {
			query = `SELECT column_name, data_type FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`
		}
		rows, err := db.Query(q(query), r.Name)
		require.NoError(t, err)
		for rows.Next() {
			var c [2]string
			require.NoError(t, rows.Scan(&c[0], &c[1]))
			cols = append(cols, c)
		}
		require.NoError(t, rows.Err())
		rows.Close()
		var wantCols [][2]string
		for _, c := range r.Columns {
			d := declared[c.Kind][1]
			if postgres {
				d = declared[c.Kind][0]
			}
			wantCols = append(wantCols, [2]string{c.Name, d})
		}
		require.Equal(t, wantCols, cols, "%s: its columns and their types", r.Name)
		if !postgres {
			for _, c := range r.Columns {
				classes := map[string]bool{}
				rows, err := db.Query(`SELECT DISTINCT typeof(` + c.Name + `) FROM ` + r.Name + ` WHERE ` + c.Name + ` IS NOT NULL`)
				require.NoError(t, err)
				for rows.Next() {
					var s string
					require.NoError(t, rows.Scan(&s))
					classes[s] = true
				}
				rows.Close()
				for s := range classes {
					require.Equal(t, storage[c.Kind], s, "%s.%s holds %s values", r.Name, c.Name, s)
				}
			}
		}
		require.Equal(t, want[r.Name], typedRows(t, db, q, r, restaurant), "%s: rows", r.Name)
	}
}

// requireDuckDB finds node and DuckDB's Node package (npm ci --prefix
// .ci/duckdb, which CI runs before the tests). In CI (CI set) their
// absence fails the test; elsewhere it skips, saying what to install.
func requireDuckDB(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: CI must read the Parquet export with DuckDB", what)
		}
		t.Skipf("%s (CI runs this test; set CI to make this a failure)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat("../.ci/duckdb/node_modules/@duckdb/node-api/package.json"); err != nil {
		missing("DuckDB is not installed: run npm ci --prefix .ci/duckdb")
	}
	return node
}

// duckdb runs .ci/duckdb/read.mjs (files DIR, or query DIR with the
// statements on stdin) and decodes its JSON, numbers as json.Number.
func duckdb(t *testing.T, node string, stdin []byte, out any, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"../.ci/duckdb/read.mjs"}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "DuckDB: %s", stderr.String())
	d := json.NewDecoder(&stdout)
	d.UseNumber()
	require.NoError(t, d.Decode(out))
}

// collectionsCovered is every collection of the catalog: the typed layer
// has a relation for each.
func collectionsCovered(t testing.TB) {
	t.Helper()
	var sources []string
	for _, c := range catalog.Collections {
		sources = append(sources, c.Name)
	}
	sources = append(sources, typed.DeliveriesSource)
	slices.Sort(sources)
	require.Equal(t, sources, typed.Sources(), "a typed relation for each of the 24 collections and for the deliveries")
}
