// sqlc compiles each statement on its own and has no batch spanning
// several, so the pipelines ingest needs are assembled here from the
// compiled statements.
// Their arguments and columns go by position, as in sqlc's functions;
// TestPipelinesAgreeWithSqlc holds both orders to sqlc's, so a statement
// whose parameters or columns change fails it instead of compiling.

package pgrows

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// batchSender is what a pgx connection, pool or transaction offers to
// pipeline statements.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// RecordApply appends a change and makes it the record's current state:
// RecordChangeAppend, RecordSupersedePrevious and RecordUpsertCurrent, in
// that order, then StreamWidestRecordRaise (the stream's largest record,
// which RecordApplyChange raises in its own statement), sent as one
// pipeline inside the caller's transaction (one round trip, like a single
// statement, while each statement stays on one restaurant's shard on
// Citus). When the mutation id exists already the append returns no row
// (pgx.ErrNoRows), and the others, which act only on the appended change,
// do nothing.
func RecordApply(ctx context.Context, conn db.DBTX, arg db.RecordChangeAppendParams) (db.RecordChangeAppendRow, error) {
	sender, ok := conn.(batchSender)
	if !ok {
		return db.RecordChangeAppendRow{}, errors.New("pgrows: RecordApply needs a connection or transaction that pipelines")
	}
	b := &pgx.Batch{}
	b.Queue(db.RecordChangeAppend, arg.RestaurantID, arg.Collection, arg.Sequence, arg.RecordID, arg.MutationID,
		arg.Deleted, arg.Data, arg.CapturedAt, arg.ReceivedAt, arg.SourceVersion, arg.PayloadVersion, arg.RequestSha256)
	b.Queue(db.RecordSupersedePrevious, arg.Sequence, arg.ReceivedAt, arg.RestaurantID, arg.Collection, arg.RecordID, arg.MutationID)
	b.Queue(db.RecordUpsertCurrent, arg.RestaurantID, arg.MutationID, arg.Collection, arg.Sequence)
	b.Queue(db.StreamWidestRecordRaise, arg.RestaurantID, arg.MutationID, arg.Collection, arg.Sequence)
	br := sender.SendBatch(ctx, b)
	var i db.RecordChangeAppendRow
	appendErr := br.QueryRow().Scan(&i.RestaurantID, &i.Collection, &i.Sequence, &i.RecordID, &i.MutationID,
		&i.Deleted, &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion)
	_, supersedeErr := br.Exec()
	_, upsertErr := br.Exec()
	_, widestErr := br.Exec()
	closeErr := br.Close()
	// The first failure in pipeline order is the cause; the statements
	// after it only report the aborted transaction. No row from the append
	// is not a failure of the pipeline.
	for _, err := range []error{appendErr, supersedeErr, upsertErr, widestErr, closeErr} {
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return db.RecordChangeAppendRow{}, err
		}
	}
	return i, appendErr
}

// RecordIngestApply takes the stream's next position (and the receivedAt
// it assigns) and applies a change at it: StreamNextSequence then RecordApplyChange, sent as one pipeline
// with one Sync outside any transaction, so PostgreSQL runs both in one
// implicit transaction that commits at the Sync, in one round trip. The
// stream row's lock is held only while the server runs the two statements
// and commits, never across a round trip to the client. A failure of
// either statement rolls both back (the position included). conn must be a
// pool or a connection, not a transaction (whose commit would come later).
func RecordIngestApply(ctx context.Context, conn db.DBTX, stream db.StreamNextSequenceParams, arg db.RecordApplyChangeParams) (db.RecordApplyChangeRow, error) {
	sender, ok := conn.(batchSender)
	if _, inTx := conn.(pgx.Tx); !ok || inTx {
		return db.RecordApplyChangeRow{}, errors.New("pgrows: RecordIngestApply needs a pool or connection that pipelines, outside a transaction")
	}
	b := &pgx.Batch{}
	b.Queue(db.StreamNextSequence, streamArgs(stream)...)
	b.Queue(db.RecordApplyChange, applyArgs(arg)...)
	br := sender.SendBatch(ctx, b)
	var next db.StreamNextSequenceRow
	streamErr := br.QueryRow().Scan(&next.LastSequence, &next.LastReceivedAt)
	var i db.RecordApplyChangeRow
	applyErr := br.QueryRow().Scan(&i.RestaurantID, &i.Collection, &i.Sequence, &i.RecordID, &i.MutationID,
		&i.Deleted, &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion)
	closeErr := br.Close()
	// The first failure in pipeline order is the cause; the statement after
	// it only reports the aborted transaction.
	for _, err := range []error{streamErr, applyErr, closeErr} {
		if err != nil {
			return db.RecordApplyChangeRow{}, err
		}
	}
	return i, nil
}

// Applied is one change's outcome in RecordIngestApplyEach: the row its
// RecordApplyChange returned, or the error that rolled its transaction
// back (or, after a failure of the connection, that error).
type Applied struct {
	Row db.RecordApplyChangeRow
	Err error
}

// The names RecordIngestApplyEach prepares its statements under, on each
// connection once.
const (
	streamNextSequenceStmt = "pgrows_stream_next_sequence"
	recordApplyChangeStmt  = "pgrows_record_apply_change"
)

// RecordIngestApplyEach is RecordIngestApply for many changes at once:
// StreamNextSequence then RecordApplyChange for each, every pair followed
// by a Sync of its own, all sent before any answer is read. Each pair is
// one implicit transaction that commits at its Sync, exactly as a single
// RecordIngestApply: a pair that fails rolls back alone (its position with
// it) and the server runs the next pair as if nothing happened, so one
// change's failure never aborts another's. The whole pipeline costs one
// round trip (and, on a connection's first use, two more to prepare the
// statements), where a change at a time costs one each.
//
// A change's error is its own when it is a *pgconn.PgError, a statement's
// (a unique violation of record_changes_pkey when its mutation id was
// taken meanwhile) or its commit's (a deferred constraint, a
// serialization failure): that change rolled back, and the later ones
// were read as usual. So is pgx.ErrNoRows, a statement that returned no
// row (neither does, as the statements stand; the caller treats it as a
// failure of that change alone). Any other error, or a FATAL one at the
// commit (the server ending the session), is the connection's,
// which it leaves unusable: the change it met, if its outcome was not
// read yet, and every later one carry it, though the server may have
// committed some of them (each is then found by its mutation id). The
// conn's tracer, if it traces batches, sees the statements as it sees a
// pgx.Batch's.
func RecordIngestApplyEach(ctx context.Context, conn *pgx.Conn, streams []db.StreamNextSequenceParams, args []db.RecordApplyChangeParams) []Applied {
	out := make([]Applied, len(args))
	if len(streams) != len(args) {
		return failFrom(out, 0, errors.New("pgrows: RecordIngestApplyEach needs one stream per change"))
	}
	if len(args) == 0 {
		return out
	}
	next, err := conn.Prepare(ctx, streamNextSequenceStmt, db.StreamNextSequence)
	if err != nil {
		return failFrom(out, 0, err)
	}
	apply, err := conn.Prepare(ctx, recordApplyChangeStmt, db.RecordApplyChange)
	if err != nil {
		return failFrom(out, 0, err)
	}
	tracer, _ := conn.Config().Tracer.(pgx.BatchTracer)
	if tracer != nil {
		b := &pgx.Batch{}
		for i := range args {
			b.Queue(db.StreamNextSequence, streamArgs(streams[i])...)
			b.Queue(db.RecordApplyChange, applyArgs(args[i])...)
		}
		ctx = tracer.TraceBatchStart(ctx, conn, pgx.TraceBatchStartData{Batch: b})
	}
	m := conn.TypeMap()
	p := conn.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	send := func(sd *pgconn.StatementDescription, a []any) error {
		if err := eqb.Build(m, sd, a); err != nil {
			return err
		}
		p.SendQueryPrepared(sd.Name, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
		return nil
	}
	for i := range args {
		if err := send(next, streamArgs(streams[i])); err != nil {
			return endEach(ctx, conn, tracer, p, failFrom(out, 0, err))
		}
		if err := send(apply, applyArgs(args[i])); err != nil {
			return endEach(ctx, conn, tracer, p, failFrom(out, 0, err))
		}
		p.SendPipelineSync()
	}
	if err := p.Flush(); err != nil {
		return endEach(ctx, conn, tracer, p, failFrom(out, 0, err))
	}
	for i := range args {
		if err := readPair(ctx, conn, tracer, p, m, streams[i], args[i], &out[i]); err != nil {
			return endEach(ctx, conn, tracer, p, failFrom(out, i, err))
		}
		// The pair's Sync, where its transaction commits: after a failure of
		// a statement the server skipped the rest of the pair, and so does
		// the pipeline's reader.
		err := readSync(p, i)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
		case !errors.As(err, &pgErr) || fatal(pgErr):
			// The connection failed at the commit, or the server went away
			// from it: whether the pair committed is unknown, as for a
			// single PUT cut there.
			if errors.As(out[i].Err, &pgErr) {
				i++ // a failed statement rolled it back: it did not
			}
			return endEach(ctx, conn, tracer, p, failFrom(out, i, err))
		default:
			// The commit itself failed (a deferred constraint, a
			// serialization failure): the pair rolled back whole. The
			// server still answers the Sync, after the error; pgconn read
			// the error in its place and put the Sync back, to read now.
			out[i] = Applied{Err: err}
			if err := readSync(p, i); err != nil {
				return endEach(ctx, conn, tracer, p, failFrom(out, i+1, err))
			}
		}
	}
	return forgetStalePlans(ctx, conn, endEach(ctx, conn, tracer, p, out))
}

// readPair reads the results of one pair's two statements into a. It
// returns an error only when the connection failed (the pair's outcome,
// and every later one's, unknown); the pair's own failure, a statement's
// *pgconn.PgError or a statement that returned no row, goes to a.Err.
func readPair(ctx context.Context, conn *pgx.Conn, tracer pgx.BatchTracer, p *pgconn.Pipeline, m *pgtype.Map,
	stream db.StreamNextSequenceParams, arg db.RecordApplyChangeParams, a *Applied) error {
	var s db.StreamNextSequenceRow
	err := scanResult(p, m, &s.LastSequence, &s.LastReceivedAt)
	traceQuery(ctx, conn, tracer, db.StreamNextSequence, streamArgs(stream), err)
	if err == nil || errors.Is(err, pgx.ErrNoRows) {
		// No error: the server ran the second statement, whose result
		// comes next.
		r := &a.Row
		applyErr := scanResult(p, m, &r.RestaurantID, &r.Collection, &r.Sequence, &r.RecordID, &r.MutationID,
			&r.Deleted, &r.Data, &r.CapturedAt, &r.ReceivedAt, &r.SourceVersion, &r.PayloadVersion)
		traceQuery(ctx, conn, tracer, db.RecordApplyChange, applyArgs(arg), applyErr)
		if lost(applyErr) {
			return applyErr
		}
		if err == nil {
			err = applyErr
		}
	}
	if lost(err) {
		return err
	}
	if err != nil {
		*a = Applied{Err: err}
	}
	return nil
}

// lost says whether err, read from a statement's result, is the
// connection's failure rather than the statement's own (its
// *pgconn.PgError, or no row).
func lost(err error) bool {
	var pgErr *pgconn.PgError
	return err != nil && !errors.As(err, &pgErr) && !errors.Is(err, pgx.ErrNoRows)
}

// readSync reads the Sync that ends change i's pair.
func readSync(p *pgconn.Pipeline, i int) error {
	res, err := p.GetResults()
	if _, ok := res.(*pgconn.PipelineSync); err == nil && !ok {
		err = fmt.Errorf("pgrows: expected the Sync of change %d, got %T", i, res)
	}
	return err
}

// fatal says whether the server ended the session with err (an
// administrator's termination, a shutdown, a crash), after which the
// connection is gone.
func fatal(err *pgconn.PgError) bool {
	sev := err.SeverityUnlocalized
	if sev == "" {
		sev = err.Severity
	}
	return sev == "FATAL" || sev == "PANIC"
}

// forgetStalePlans deallocates the statements RecordIngestApplyEach
// prepared when PostgreSQL refused them as stale (SQLSTATE 0A000, "cached
// plan must not change result type": a migration changed a column they
// return). PostgreSQL keeps refusing a statement so prepared, and pgx
// would keep the name, so without this every later batch on the
// connection would fail until the pool recycled it; now the next one
// prepares them again.
func forgetStalePlans(ctx context.Context, conn *pgx.Conn, out []Applied) []Applied {
	for _, a := range out {
		var pgErr *pgconn.PgError
		if errors.As(a.Err, &pgErr) && pgErr.Code == "0A000" && !conn.IsClosed() { // feature_not_supported
			// A failure here leaves the connection as it was; the next
			// batch meets the stale plan again and retries this.
			_ = conn.Deallocate(ctx, streamNextSequenceStmt)
			_ = conn.Deallocate(ctx, recordApplyChangeStmt)
			break
		}
	}
	return out
}

// streamArgs and applyArgs are the arguments of StreamNextSequence and
// RecordApplyChange in sqlc's order, for every pipeline that sends them.
func streamArgs(s db.StreamNextSequenceParams) []any {
	return []any{s.RestaurantID, s.Collection, s.ReceivedAt}
}

func applyArgs(a db.RecordApplyChangeParams) []any {
	return []any{a.RecordID, a.MutationID, a.Deleted, a.Data, a.CapturedAt,
		a.SourceVersion, a.PayloadVersion, a.RequestSha256, a.RestaurantID, a.Collection}
}

// scanResult reads the next statement's one row into dst: pgx.ErrNoRows
// when it returned none, its *pgconn.PgError when it failed.
func scanResult(p *pgconn.Pipeline, m *pgtype.Map, dst ...any) error {
	res, err := p.GetResults()
	if err != nil {
		return err
	}
	rr, ok := res.(*pgconn.ResultReader)
	if !ok {
		return fmt.Errorf("pgrows: expected a statement's result, got %T", res)
	}
	rows := pgx.RowsFromResultReader(m, rr)
	err = pgx.ErrNoRows
	if rows.Next() {
		err = rows.Scan(dst...)
	}
	rows.Close()
	if rows.Err() != nil {
		return rows.Err()
	}
	return err
}

// failFrom gives err to every change from i on.
func failFrom(out []Applied, i int, err error) []Applied {
	for ; i < len(out); i++ {
		out[i] = Applied{Err: err}
	}
	return out
}

// endEach closes the pipeline (a failed one closes its connection, which
// the pool then drops) and ends the batch's trace.
func endEach(ctx context.Context, conn *pgx.Conn, tracer pgx.BatchTracer, p *pgconn.Pipeline, out []Applied) []Applied {
	err := p.Close()
	if tracer != nil {
		tracer.TraceBatchEnd(ctx, conn, pgx.TraceBatchEndData{Err: err})
	}
	return out
}

func traceQuery(ctx context.Context, conn *pgx.Conn, tracer pgx.BatchTracer, sql string, args []any, err error) {
	if tracer != nil {
		tracer.TraceBatchQuery(ctx, conn, pgx.TraceBatchQueryData{SQL: sql, Args: args, Err: err})
	}
}
