package mirror

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// ExportFormat is the file format of an export.
type ExportFormat string

// The formats of foodsafe-sync export.
const (
	Parquet ExportFormat = "parquet"
	CSV     ExportFormat = "csv"
)

// Exported is one file an export wrote.
type Exported struct {
	Relation string `json:"relation"`
	File     string `json:"file"`
	Rows     int64  `json:"rows"`
	Bytes    int64  `json:"bytes"`
}

// exportRowGroup bounds the rows a Parquet row group holds, which the
// writer keeps in memory until it is complete: memory stays flat
// whatever a relation's size.
const exportRowGroup = 64 * 1024

// Export writes every typed relation the target holds into dir, one file
// per relation named after it (typed_deliveries.parquet), with the
// relation's columns in order and their types, all read in one
// transaction so the files agree with each other. A file is written
// under a temporary name and renamed into place once complete.
func (t *Target) Export(ctx context.Context, format ExportFormat, dir string) ([]Exported, error) {
	if format != Parquet && format != CSV {
		return nil, fmt.Errorf("format %q: parquet or csv", format)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var opts *sql.TxOptions
	if t.dialect.postgres {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := t.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read only
	held, err := t.recordedTyped(ctx, tx, "")
	if err != nil {
		return nil, err
	}
	var out []Exported
	for _, r := range TypedRelations() {
		if _, ok := held[r.Name]; !ok {
			continue // a collection the target does not mirror
		}
		e, err := t.exportRelation(ctx, tx, r, format, dir)
		if err != nil {
			return out, fmt.Errorf("%s: %w", r.Name, err)
		}
		out = append(out, e)
	}
	return out, nil
}

func (t *Target) exportRelation(ctx context.Context, tx *sql.Tx, r *Relation, format ExportFormat, dir string) (Exported, error) {
	name := r.Name + "." + string(format)
	e := Exported{Relation: r.Name, File: filepath.Join(dir, name)}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return e, err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	var w rowWriter
	if format == Parquet {
		w = newParquetWriter(f, r)
	} else {
		w, err = newCSVWriter(f, r)
		if err != nil {
			f.Close()
			return e, err
		}
	}
	e.Rows, err = t.readRelation(ctx, tx, r, w.write)
	if err == nil {
		err = w.close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return e, err
	}
	if err := os.Rename(f.Name(), e.File); err != nil {
		return e, err
	}
	if fi, err := os.Stat(e.File); err == nil {
		e.Bytes = fi.Size()
	}
	return e, nil
}

// readRelation reads every row of r in key order and hands each to f as
// Go values (string, int64, float64, bool, time.Time, or nil), the same
// whichever the target.
func (t *Target) readRelation(ctx context.Context, q querier, r *Relation, f func([]any) error) (int64, error) {
	var names []string
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	rows, err := q.QueryContext(ctx, `SELECT `+strings.Join(names, ", ")+` FROM `+r.Name+` ORDER BY `+strings.Join(r.KeyColumns(), ", "))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cells := make([]any, len(r.Columns))
	for i, c := range r.Columns {
		cells[i] = t.scanCell(c)
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
func (t *Target) scanCell(c Column) any {
	switch {
	case c.Kind == Integer || c.Kind == Millis:
		return new(sql.NullInt64)
	case c.Kind == Number:
		return new(sql.NullFloat64)
	case c.Kind == Boolean:
		return new(sql.NullBool)
	case c.Kind == Time && t.dialect.postgres:
		return new(sql.NullTime)
	default:
		return new(sql.NullString)
	}
}

// cellValue is the Go value of a scanned cell (nil for NULL).
func cellValue(c Column, cell any) (any, error) {
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
		if c.Kind != Time {
			return v.String, nil
		}
		at, err := parseISOMillis(v.String)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		return at, nil
	}
	return nil, nil
}

type rowWriter interface {
	write([]any) error
	close() error
}

// parquetWriter writes a relation as Parquet: text as STRING, integers
// as INT64, numbers as DOUBLE, booleans as BOOLEAN, times as
// TIMESTAMP(MILLIS, UTC), JSON as STRING; keys required, every other
// column optional. Snappy compression, which DuckDB, pyarrow and Spark
// all read.
type parquetWriter struct {
	w     *parquet.GenericWriter[any]
	rel   *Relation
	batch []parquet.Row
}

// parquetSchema is the relation's Parquet schema. parquet-go's dynamic
// groups order their columns by name; a struct type keeps the relation's
// order, so one is made for the relation.
func parquetSchema(r *Relation) *parquet.Schema {
	fields := make([]reflect.StructField, len(r.Columns))
	for i, c := range r.Columns {
		var typ reflect.Type
		tag := c.Name
		switch c.Kind {
		case Integer, Millis:
			typ = reflect.TypeFor[int64]()
		case Number:
			typ = reflect.TypeFor[float64]()
		case Boolean:
			typ = reflect.TypeFor[bool]()
		case Time:
			typ, tag = reflect.TypeFor[int64](), tag+",timestamp(millisecond:utc)"
		default:
			typ = reflect.TypeFor[string]()
		}
		if !c.Key {
			typ = reflect.PointerTo(typ)
		}
		fields[i] = reflect.StructField{Name: "C" + strconv.Itoa(i), Type: typ, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	return parquet.SchemaOf(reflect.New(reflect.StructOf(fields)).Elem().Interface())
}

func newParquetWriter(w io.Writer, r *Relation) *parquetWriter {
	return &parquetWriter{rel: r, w: parquet.NewGenericWriter[any](w, parquetSchema(r), parquet.Compression(&snappy.Codec{}),
		parquet.MaxRowsPerRowGroup(exportRowGroup), parquet.CreatedBy("foodsafe-sync", "", ""))}
}

func (p *parquetWriter) write(row []any) error {
	out := make(parquet.Row, len(row))
	for i, v := range row {
		def := 1
		if p.rel.Columns[i].Key {
			def = 0
		}
		var val parquet.Value
		switch v := v.(type) {
		case nil:
			out[i] = parquet.NullValue().Level(0, 0, i)
			continue
		case string:
			val = parquet.ByteArrayValue([]byte(v))
		case int64:
			val = parquet.Int64Value(v)
		case float64:
			val = parquet.DoubleValue(v)
		case bool:
			val = parquet.BooleanValue(v)
		case time.Time:
			val = parquet.Int64Value(v.UnixMilli())
		default:
			return fmt.Errorf("column %s: a %T", p.rel.Columns[i].Name, v)
		}
		out[i] = val.Level(0, def, i)
	}
	p.batch = append(p.batch, out)
	if len(p.batch) == 1024 {
		return p.flush()
	}
	return nil
}

func (p *parquetWriter) flush() error {
	_, err := p.w.WriteRows(p.batch)
	p.batch = p.batch[:0]
	return err
}

func (p *parquetWriter) close() error {
	if err := p.flush(); err != nil {
		return err
	}
	return p.w.Close()
}

// csvWriter writes a relation as CSV (RFC 4180) with a header line:
// times in ISO-8601 UTC with milliseconds, booleans true or false, null
// as an empty field (which CSV cannot tell from an empty text).
type csvWriter struct {
	w   *csv.Writer
	rec []string
}

func newCSVWriter(w io.Writer, r *Relation) (*csvWriter, error) {
	c := &csvWriter{w: csv.NewWriter(w), rec: make([]string, len(r.Columns))}
	for i, col := range r.Columns {
		c.rec[i] = col.Name
	}
	return c, c.w.Write(c.rec)
}

func (c *csvWriter) write(row []any) error {
	for i, v := range row {
		switch v := v.(type) {
		case nil:
			c.rec[i] = ""
		case string:
			c.rec[i] = v
		case int64:
			c.rec[i] = strconv.FormatInt(v, 10)
		case float64:
			c.rec[i] = strconv.FormatFloat(v, 'g', -1, 64)
		case bool:
			c.rec[i] = strconv.FormatBool(v)
		case time.Time:
			c.rec[i] = v.UTC().Format(isoMillis)
		}
	}
	return c.w.Write(c.rec)
}

func (c *csvWriter) close() error {
	c.w.Flush()
	return c.w.Error()
}
