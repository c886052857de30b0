package pgrows

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// decodeWalkRow reads both wire formats and refuses, naming the column, what a
// walk statement never sends: a NULL where the row has no room for one,
// an integer or boolean of the wrong size, text that is not a number, an
// unknown jsonb version. (TestRecordWalkPageIntoAgrees checks what it
// reads from PostgreSQL itself.)
func TestWalkRowDecode(t *testing.T) {
	names := []string{"pinned", "record_id", "sequence", "mutation_id", "deleted", "data", "captured_at", "received_at", "source_version", "payload_version", "sum_bytes"}
	fields := func(format int16, data uint32) []pgconn.FieldDescription {
		f := make([]pgconn.FieldDescription, len(names))
		for n := range f {
			f[n] = pgconn.FieldDescription{Name: names[n], DataTypeOID: walkColumns[n][0], Format: format}
		}
		f[5].DataTypeOID = data
		return f
	}
	i8 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	binaryRow := func() [][]byte {
		return [][]byte{i8(9), []byte("r"), i8(3), []byte("m"), {1}, []byte(`{"a":1E+2}`), i8(7), i8(8), []byte("4.2"), {0, 0, 0, 2}, {1}}
	}
	textRow := func() [][]byte {
		return [][]byte{[]byte("9"), []byte("r"), []byte("3"), []byte("m"), []byte("t"), []byte(`{"a":1E+2}`), []byte("7"), []byte("8"), []byte("4.2"), []byte("2"), []byte("t")}
	}
	var text pageArena
	for name, c := range map[string]struct {
		fields []pgconn.FieldDescription
		raw    [][]byte
	}{
		"binary":       {fields(pgtype.BinaryFormatCode, pgtype.JSONOID), binaryRow()},
		"text":         {fields(pgtype.TextFormatCode, pgtype.JSONOID), textRow()},
		"binary jsonb": {fields(pgtype.BinaryFormatCode, pgtype.JSONBOID), func() [][]byte { r := binaryRow(); r[5] = append([]byte{1}, r[5]...); return r }()},
		"text jsonb":   {fields(pgtype.TextFormatCode, pgtype.JSONBOID), textRow()},
	} {
		var r db.RecordWalkPageRow
		if err := decodeWalkRow(&r, c.fields, c.raw, &text); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Pinned != 9 || r.RecordID != "r" || r.Sequence != 3 || r.MutationID != "m" || !r.Deleted || string(r.Data) != `{"a":1E+2}` ||
			r.CapturedAt != 7 || r.ReceivedAt != 8 || r.SourceVersion == nil || *r.SourceVersion != "4.2" || r.PayloadVersion != 2 || !r.SumBytes {
			t.Errorf("%s: %+v", name, r)
		}
	}

	for name, c := range map[string]struct {
		format int16
		data   uint32
		column int
		value  []byte
		want   string
	}{
		"NULL pin":              {pgtype.BinaryFormatCode, pgtype.JSONOID, 0, nil, "column pinned: NULL where a value is required"},
		"NULL record id":        {pgtype.BinaryFormatCode, pgtype.JSONOID, 1, nil, "column record_id: NULL"},
		"NULL deleted":          {pgtype.BinaryFormatCode, pgtype.JSONOID, 4, nil, "column deleted: NULL"},
		"NULL payload version":  {pgtype.BinaryFormatCode, pgtype.JSONOID, 9, nil, "column payload_version: NULL"},
		"NULL sum_bytes":        {pgtype.BinaryFormatCode, pgtype.JSONOID, 10, nil, "column sum_bytes: NULL"},
		"short int8":            {pgtype.BinaryFormatCode, pgtype.JSONOID, 2, []byte{0, 1}, "column sequence: 2 bytes for an integer of 8"},
		"long boolean":          {pgtype.BinaryFormatCode, pgtype.JSONOID, 4, []byte{1, 1}, "column deleted: 2 bytes for a boolean"},
		"text that is no int":   {pgtype.TextFormatCode, pgtype.JSONOID, 6, []byte("7x"), `column captured_at: strconv.ParseInt: parsing "7x"`},
		"int4 out of range":     {pgtype.TextFormatCode, pgtype.JSONOID, 9, []byte("2147483648"), "column payload_version: strconv.ParseInt"},
		"unknown jsonb version": {pgtype.BinaryFormatCode, pgtype.JSONBOID, 5, []byte{2, '{', '}'}, "column data: unknown jsonb version"},
		"empty jsonb":           {pgtype.BinaryFormatCode, pgtype.JSONBOID, 5, []byte{}, "column data: unknown jsonb version"},
	} {
		raw := binaryRow()
		if c.format == pgtype.TextFormatCode {
			raw = textRow()
		}
		if c.data == pgtype.JSONBOID {
			raw[5] = append([]byte{1}, raw[5]...)
		}
		raw[c.column] = c.value
		var r db.RecordWalkPageRow
		err := decodeWalkRow(&r, fields(c.format, c.data), raw, &text)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

// The arena hands out copies that cannot grow into each other, and
// values larger than a block.
func TestPageArena(t *testing.T) {
	var a pageArena
	x := a.bytes([]byte("abc"))
	y := a.bytes([]byte("def"))
	_ = append(x, 'X') // capped at its length: appending reallocates
	if string(y) != "def" || cap(x) != 3 {
		t.Fatalf("x %q (cap %d), y %q", x, cap(x), y)
	}
	big := strings.Repeat("z", pageArenaBlock+1)
	if got := a.string([]byte(big)); got != big {
		t.Fatal("a value larger than a block")
	}
	if a.string(nil) != "" || a.string([]byte{}) != "" {
		t.Fatal("empty")
	}
}
