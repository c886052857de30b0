package export

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
)

// parquetWriter writes a relation as Parquet: text as STRING, integers
// as INT64, numbers as DOUBLE, booleans as BOOLEAN, times as
// TIMESTAMP(MILLIS, UTC), JSON as STRING; keys required, every other
// column optional. Snappy compression, which DuckDB, pyarrow and Spark
// all read.
type parquetWriter struct {
	w     *parquet.GenericWriter[any]
	rel   *typed.Relation
	batch []parquet.Row
}

// parquetSchema is the relation's Parquet schema. parquet-go's dynamic
// groups order their columns by name; a struct type keeps the relation's
// order, so one is made for the relation.
func parquetSchema(r *typed.Relation) *parquet.Schema {
	fields := make([]reflect.StructField, len(r.Columns))
	for i, c := range r.Columns {
		var typ reflect.Type
		tag := c.Name
		switch c.Kind {
		case typed.Integer, typed.Millis:
			typ = reflect.TypeFor[int64]()
		case typed.Number:
			typ = reflect.TypeFor[float64]()
		case typed.Boolean:
			typ = reflect.TypeFor[bool]()
		case typed.Time:
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

func newParquetWriter(w io.Writer, r *typed.Relation) *parquetWriter {
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
