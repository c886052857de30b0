// A walk page is the service's largest read, and the function sqlc
// generates for it allocates more than the page it returns.

package pgrows

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// RecordWalkPageInto runs RecordWalkPage and appends its rows to items,
// returning the grown slice (on an error too, so the caller can reuse it).
//
// The generated RecordWalkPage grows a new slice from nothing by append,
// and each row it scans escapes to the heap before it is copied in, which
// was most of what a walk request allocated under make bench-http (the
// measured figures are in docs/performance.md, "make bench-http", not
// here, where they would go stale). Here the caller passes a
// slice it keeps between requests and each row is decoded in place, from
// the bytes PostgreSQL sent (rows.RawValues), into fields whose text (ids,
// mutation ids, data) is copied into a few blocks of one page arena
// (pageArena) instead of three allocations per row: pgx's Scan, through
// its per-column scan plans, and the allocations were a large share of a
// walk request's CPU. The statement, its parameters and its row type are sqlc's;
// a result whose columns are not the types this decoder reads (a statement
// changed without this file) is scanned by pgx instead, and
// TestRecordWalkPageIntoAgrees holds both paths to the generated scan.
//
// arg.MaxBytes bounds the page by bytes (walkCut): cut reports that rows
// were left out beyond the bytes, so the page is not the walk's last
// whatever its count. When the statement declines the page because a
// record of the stream could carry it to arg.MaxBytes (its sum_bytes
// marker; declined reports it), RecordWalkPageSummed reads it instead,
// bounded by bytes in the database: a second round trip for such streams
// alone, so that a page of small records pays for no running sum
// (sql/queries/records.sql says what that costs). summed runs
// RecordWalkPageSummed at once, for a stream known to need it.
func RecordWalkPageInto(ctx context.Context, conn db.DBTX, arg db.RecordWalkPageParams, items []db.RecordWalkPageRow, summed bool) (_ []db.RecordWalkPageRow, cut, declined bool, _ error) {
	return walkRowsInto(ctx, conn, items, arg.MaxBytes, walkStatements(pageStatements, summed),
		arg.RestaurantID, arg.Collection, arg.Pinned, arg.AfterSequence, arg.MaxRows, arg.MaxBytes)
}

// RecordWalkFirstPageInto is RecordWalkFirstPage as RecordWalkPageInto is
// RecordWalkPage (RecordWalkFirstPageSummed reads a page it declines):
// its columns are RecordWalkPage's.
func RecordWalkFirstPageInto(ctx context.Context, conn db.DBTX, arg db.RecordWalkFirstPageParams, items []db.RecordWalkPageRow, summed bool) (_ []db.RecordWalkPageRow, cut, declined bool, _ error) {
	return walkRowsInto(ctx, conn, items, arg.MaxBytes, walkStatements(firstPageStatements, summed),
		arg.RestaurantID, arg.Collection, arg.AfterSequence, arg.MaxRows, arg.MaxBytes)
}

// pageStatements and firstPageStatements are the statements a walk page
// may run, in order: the plain one, then the summed one should it
// decline (package variables: the slices are not made again per page).
var (
	pageStatements      = []string{db.RecordWalkPage, db.RecordWalkPageSummed}
	firstPageStatements = []string{db.RecordWalkFirstPage, db.RecordWalkFirstPageSummed}
)

// walkStatements are statements, or their summed one alone when summed.
func walkStatements(statements []string, summed bool) []string {
	if summed {
		return statements[1:]
	}
	return statements
}

// walkRowsInto runs the first of a walk's statements and appends its rows
// to items, at most maxBytes of them (nil: no bound); the next, which
// takes the same arguments, when one declines the page (declined).
func walkRowsInto(ctx context.Context, conn db.DBTX, items []db.RecordWalkPageRow, maxBytes *int64, statements []string, args ...any) (_ []db.RecordWalkPageRow, cut, declined bool, _ error) {
	n := len(items)
	for _, sql := range statements {
		clear(items[n:]) // a declining statement sends its marker alone; no row of it is kept
		items = items[:n]
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return items, false, declined, err
		}
		c := newWalkCut(maxBytes)
		var sum bool
		if items, sum, err = scanWalkRows(rows, items, &c); err != nil || !sum {
			return items, c.cut, declined, err
		}
		declined = true
	}
	return items, false, declined, errSummedDeclined
}

// errSummedDeclined: a summed walk statement returned the marker only the
// plain ones return, which no statement in sql/queries does.
var errSummedDeclined = errors.New("pgrows: the summed walk statement declined the page")

// scanWalkRows appends the rows of a walk statement's result to items,
// as far as cut keeps them, and closes it. sum reports the statement's
// sum_bytes marker (the page is to be read by its summed statement),
// which is not appended.
func scanWalkRows(rows pgx.Rows, items []db.RecordWalkPageRow, cut *walkCut) (_ []db.RecordWalkPageRow, sum bool, _ error) {
	defer rows.Close()
	var (
		decode = walkColumnsDecodable(rows.FieldDescriptions())
		dest   []any
		text   pageArena
	)
	for rows.Next() {
		raw := rows.RawValues()
		if decode {
			// A row beyond the cut is not copied out of pgx's buffer.
			c := rawColumns{fields: rows.FieldDescriptions(), raw: raw}
			if seq := c.int(2, 8); c.err == nil && cut.skip(seq) {
				continue
			}
		}
		items = append(items, db.RecordWalkPageRow{})
		i := &items[len(items)-1]
		if decode {
			if err := decodeWalkRow(i, rows.FieldDescriptions(), raw, &text); err != nil {
				return items, false, err
			}
		} else {
			if dest == nil {
				dest = make([]any, 11)
			}
			dest[0], dest[1], dest[2], dest[3], dest[4] = &i.Pinned, &i.RecordID, &i.Sequence, &i.MutationID, &i.Deleted
			dest[5], dest[6], dest[7], dest[8], dest[9] = &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion
			dest[10] = &i.SumBytes
			if err := rows.Scan(dest...); err != nil {
				return items, false, err
			}
		}
		if i.SumBytes {
			sum = true
			items = items[:len(items)-1]
			continue
		}
		items = cut.add(items)
	}
	return items, sum, rows.Err()
}

// walkColumns are the types of the walk statements' columns, in order: the
// ones decodeWalkRow reads. data is json, or jsonb on a table not yet migrated
// (00013); both are accepted in either wire format.
var walkColumns = [11][]uint32{
	{pgtype.Int8OID},                  // pinned
	{pgtype.TextOID},                  // record_id
	{pgtype.Int8OID},                  // sequence
	{pgtype.TextOID},                  // mutation_id
	{pgtype.BoolOID},                  // deleted
	{pgtype.JSONOID, pgtype.JSONBOID}, // data
	{pgtype.Int8OID},                  // captured_at
	{pgtype.Int8OID},                  // received_at
	{pgtype.TextOID},                  // source_version
	{pgtype.Int4OID},                  // payload_version
	{pgtype.BoolOID},                  // sum_bytes
}

// walkColumnsDecodable reports whether the result's columns are the ones
// decodeWalkRow reads.
func walkColumnsDecodable(fields []pgconn.FieldDescription) bool {
	if len(fields) != len(walkColumns) {
		return false
	}
	for n, f := range fields {
		if f.Format != pgtype.TextFormatCode && f.Format != pgtype.BinaryFormatCode {
			return false
		}
		ok := false
		for _, oid := range walkColumns[n] {
			ok = ok || f.DataTypeOID == oid
		}
		if !ok {
			return false
		}
	}
	return true
}

// decodeWalkRow sets r from one result row of a walk statement, whose
// columns walkColumnsDecodable accepted; text is copied into the arena.
// A NULL where the row type has no room for one is an error, as pgx's
// Scan makes it.
func decodeWalkRow(r *db.RecordWalkPageRow, fields []pgconn.FieldDescription, raw [][]byte, text *pageArena) error {
	c := rawColumns{fields: fields, raw: raw}
	r.Pinned = c.int(0, 8)
	r.RecordID = text.string(c.notNull(1))
	r.Sequence = c.int(2, 8)
	r.MutationID = text.string(c.notNull(3))
	r.Deleted = c.bool(4)
	if d := raw[5]; d != nil {
		if fields[5].DataTypeOID == pgtype.JSONBOID && fields[5].Format == pgtype.BinaryFormatCode {
			// jsonb's binary form is a version byte, 1, then the text.
			if len(d) == 0 || d[0] != 1 {
				return fmt.Errorf("column %s: unknown jsonb version", fields[5].Name)
			}
			d = d[1:]
		}
		r.Data = text.bytes(d)
	}
	r.CapturedAt = c.int(6, 8)
	r.ReceivedAt = c.int(7, 8)
	if sv := raw[8]; sv != nil {
		s := text.string(sv)
		r.SourceVersion = &s
	}
	r.PayloadVersion = int32(c.int(9, 4))
	r.SumBytes = c.bool(10)
	return c.err
}

var errNull = errors.New("NULL where a value is required")

// rawColumns reads one row's raw values, keeping the first error.
type rawColumns struct {
	fields []pgconn.FieldDescription
	raw    [][]byte
	err    error
}

func (c *rawColumns) fail(n int, err error) {
	if c.err == nil {
		c.err = fmt.Errorf("column %s: %w", c.fields[n].Name, err)
	}
}

// notNull is column n's bytes, which must not be NULL.
func (c *rawColumns) notNull(n int) []byte {
	if c.raw[n] == nil {
		c.fail(n, errNull)
	}
	return c.raw[n]
}

// int reads column n, an integer of size bytes (int8: 8, int4: 4), in
// either wire format.
func (c *rawColumns) int(n, size int) int64 {
	b := c.notNull(n)
	switch {
	case b == nil:
		return 0
	case c.fields[n].Format == pgtype.TextFormatCode:
		v, err := strconv.ParseInt(string(b), 10, size*8)
		if err != nil {
			c.fail(n, err)
		}
		return v
	case len(b) != size:
		c.fail(n, fmt.Errorf("%d bytes for an integer of %d", len(b), size))
		return 0
	case size == 8:
		return int64(binary.BigEndian.Uint64(b))
	default:
		return int64(int32(binary.BigEndian.Uint32(b)))
	}
}

// bool reads column n, a boolean, in either wire format.
func (c *rawColumns) bool(n int) bool {
	b := c.notNull(n)
	if len(b) != 1 {
		if b != nil {
			c.fail(n, fmt.Errorf("%d bytes for a boolean", len(b)))
		}
		return false
	}
	return b[0] == 1 || b[0] == 't'
}

// pageArena holds the text of one page's rows in a few blocks instead of
// an allocation per value. A block is never written again once a value is
// in it, and never reused: the strings handed out (unsafe.String over the
// block's bytes) are as immutable as any Go string, and the garbage
// collector keeps a block while any of them is alive. The arena itself is
// not kept between pages.
type pageArena struct{ block []byte }

// pageArenaBlock is the size of a block: a page of 100 temperature
// records fits in three.
const pageArenaBlock = 8 << 10

// bytes returns a copy of b in the arena, with no room to append into a
// neighbour.
func (a *pageArena) bytes(b []byte) []byte {
	if len(b) > cap(a.block)-len(a.block) {
		a.block = make([]byte, 0, max(pageArenaBlock, len(b)))
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}

// string returns b as a string whose bytes are in the arena.
func (a *pageArena) string(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	c := a.bytes(b)
	return unsafe.String(unsafe.SliceData(c), len(c))
}
