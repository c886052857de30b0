package pgrows

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// The pipelines of pipeline.go pass their arguments and scan their columns
// by position, as sqlc's functions do, but from a list written by hand: a
// statement whose parameters or columns sqlc numbers anew would still
// compile against it. Each pipeline is held here to the functions sqlc
// generates for its statements, run one by one: the same statements with
// the same arguments in the same order, and the same row scanned back.
// Every parameter and column has a value of its own, so two swapped ones of
// the same type differ; a parameter or column added to a statement is one
// the hand-written list lacks.
func TestPipelinesAgreeWithSqlc(t *testing.T) {
	ctx := context.Background()
	var arg db.RecordChangeAppendParams
	distinct(t, reflect.ValueOf(&arg).Elem(), "param")

	t.Run("RecordApply", func(t *testing.T) {
		pipelined := &recorder{}
		got, err := RecordApply(ctx, pipelined, arg)
		require.NoError(t, err)

		oneByOne := &recorder{}
		q := db.New(oneByOne)
		want, err := q.RecordChangeAppend(ctx, arg)
		require.NoError(t, err)
		require.NoError(t, q.RecordSupersedePrevious(ctx, sameFields[db.RecordSupersedePreviousParams](t, arg)))
		require.NoError(t, q.RecordUpsertCurrent(ctx, sameFields[db.RecordUpsertCurrentParams](t, arg)))
		require.NoError(t, q.StreamWidestRecordRaise(ctx, sameFields[db.StreamWidestRecordRaiseParams](t, arg)))

		require.Equal(t, oneByOne.sent, pipelined.sent, "statements and arguments, in order")
		require.Equal(t, want, got, "the appended change, column by column")
	})

	t.Run("RecordIngestApply", func(t *testing.T) {
		stream, apply := sameFields[db.StreamNextSequenceParams](t, arg), sameFields[db.RecordApplyChangeParams](t, arg)
		pipelined := &recorder{}
		got, err := RecordIngestApply(ctx, pipelined, stream, apply)
		require.NoError(t, err)

		oneByOne := &recorder{}
		q := db.New(oneByOne)
		_, err = q.StreamNextSequence(ctx, stream)
		require.NoError(t, err)
		want, err := q.RecordApplyChange(ctx, apply)
		require.NoError(t, err)

		require.Equal(t, oneByOne.sent, pipelined.sent, "statements and arguments, in order")
		require.Equal(t, oneByOne.scanned, pipelined.scanned, "the columns' types, statement by statement")
		require.Equal(t, want, got, "the applied change, column by column")
	})
}

// FeedReads sends each read as the statement sqlc generates for it, with
// the same arguments in the same order.
func TestFeedReadsAgreeWithSqlc(t *testing.T) {
	ctx := context.Background()
	pinned := int64(42)
	reads := []FeedRead{
		{RestaurantID: "r1", Collection: "areas", After: 0, MaxRows: 11},
		{RestaurantID: "r1", Collection: "products", Pinned: &pinned, After: 7, MaxRows: 12},
		{RestaurantID: "r2", After: 3, MaxRows: 13},
	}
	pipelined := &recorder{}
	_, err := FeedReads(ctx, pipelined, reads)
	require.NoError(t, err)

	oneByOne := &recorder{}
	q := db.New(oneByOne)
	_, err = q.RecordWalkFirstPage(ctx, db.RecordWalkFirstPageParams{RestaurantID: "r1", Collection: "areas", AfterSequence: 0, MaxRows: 11})
	require.NoError(t, err)
	_, err = q.RecordWalkPage(ctx, db.RecordWalkPageParams{RestaurantID: "r1", Collection: "products", Pinned: &pinned, AfterSequence: 7, MaxRows: 12})
	require.NoError(t, err)
	_, err = q.DeliveryChangesPage(ctx, db.DeliveryChangesPageParams{RestaurantID: "r2", AfterSequence: 3, MaxRows: 13})
	require.NoError(t, err)
	require.Equal(t, oneByOne.sent, pipelined.sent, "statements and arguments, in order")
}

// statement is one statement a recorder was sent.
type statement struct {
	sql  string
	args []any
}

// recorder is a connection that runs nothing: it records the statements it
// is sent, one by one or in a batch, and answers every row with the values
// distinct gives its columns by position (so a column scanned into the
// wrong field shows). Statements without rows answer nothing.
type recorder struct {
	sent    []statement
	scanned [][]string
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.sent = append(r.sent, statement{sql, args})
	return pgconn.CommandTag{}, nil
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.sent = append(r.sent, statement{sql, args})
	return noRows{}, nil
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.sent = append(r.sent, statement{sql, args})
	return positionalRow{r}
}

func (r *recorder) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, fmt.Errorf("recorder: CopyFrom is not recorded")
}

func (r *recorder) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	for _, q := range b.QueuedQueries {
		r.sent = append(r.sent, statement{q.SQL, q.Arguments})
	}
	return recordedBatch{r: r}
}

// recordedBatch answers a batch a recorder was sent (the pipelines use
// no other method of pgx.BatchResults).
type recordedBatch struct {
	pgx.BatchResults
	r *recorder
}

func (recordedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, nil }
func (b recordedBatch) QueryRow() pgx.Row              { return positionalRow{b.r} }
func (recordedBatch) Close() error                     { return nil }
func (recordedBatch) Query() (pgx.Rows, error)         { return noRows{}, nil }

// noRows is the empty result a recorder answers a query with.
type noRows struct{ pgx.Rows }

func (noRows) Close()                                       {}
func (noRows) Err() error                                   { return nil }
func (noRows) Next() bool                                   { return false }
func (noRows) FieldDescriptions() []pgconn.FieldDescription { return nil }

// positionalRow gives each column the value distinct gives its position,
// and records the types it was scanned into.
type positionalRow struct{ r *recorder }

func (p positionalRow) Scan(dest ...any) error {
	types := make([]string, len(dest))
	for k, d := range dest {
		v := reflect.ValueOf(d)
		if v.Kind() != reflect.Pointer {
			return fmt.Errorf("column %d: scanned into %T, not a pointer", k, d)
		}
		types[k] = v.Type().Elem().String()
		if err := fill(v.Elem(), fmt.Sprintf("column %d", k), k); err != nil {
			return err
		}
	}
	p.r.scanned = append(p.r.scanned, types)
	return nil
}

// distinct gives every field of the struct v a value of its own (name is
// what the values say they are).
func distinct(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	for k := range v.NumField() {
		require.NoError(t, fill(v.Field(k), name+" "+v.Type().Field(k).Name, k))
	}
}

// fill sets v to a value that stands for position k: no two positions
// share one (booleans aside, which alternate), whatever their types.
func fill(v reflect.Value, label string, k int) error {
	switch {
	case v.Kind() == reflect.String:
		v.SetString(label)
	case v.CanInt():
		v.SetInt(int64(k + 1))
	case v.Kind() == reflect.Bool:
		v.SetBool(k%2 == 1)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		v.SetBytes([]byte(label))
	case v.Kind() == reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		return fill(v.Elem(), label, k)
	default:
		return fmt.Errorf("%s: no distinct value for a %s", label, v.Type())
	}
	return nil
}

// sameFields is the P whose every field is the field of from with its
// name: what the pipelines pass to each statement from one set of
// parameters. A field from lacks fails the test.
func sameFields[P any](t *testing.T, from any) P {
	t.Helper()
	var p P
	to, src := reflect.ValueOf(&p).Elem(), reflect.ValueOf(from)
	for k := range to.NumField() {
		name := to.Type().Field(k).Name
		f := src.FieldByName(name)
		require.True(t, f.IsValid(), "%T has no field %s for %T", from, name, p)
		to.Field(k).Set(f)
	}
	return p
}
