// This file is written by hand (sqlc generates the others): sqlc compiles
// each statement on its own and has no batch spanning several, so the one
// pipeline ingest needs is assembled here from the compiled statements.
// Their arguments and columns go by position, as in sqlc's functions;
// TestPipelinesAgreeWithSqlc holds both orders to sqlc's, so a statement
// whose parameters or columns change fails it instead of compiling.

package db

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// batchSender is what a pgx connection, pool or transaction offers to
// pipeline statements.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// RecordApply appends a change and makes it the record's current state:
// RecordChangeAppend, RecordSupersedePrevious and RecordUpsertCurrent, in
// that order, sent as one pipeline inside the caller's transaction (one
// round trip, like a single statement, while each statement stays on one
// restaurant's shard on Citus). When the mutation id exists already the
// append returns no row (pgx.ErrNoRows), and the two others, which act only
// on the appended change, do nothing.
func (q *Queries) RecordApply(ctx context.Context, arg RecordChangeAppendParams) (RecordChangeAppendRow, error) {
	sender, ok := q.db.(batchSender)
	if !ok {
		return RecordChangeAppendRow{}, errors.New("db: RecordApply needs a connection or transaction that pipelines")
	}
	b := &pgx.Batch{}
	b.Queue(recordChangeAppend, arg.RestaurantID, arg.Collection, arg.Sequence, arg.RecordID, arg.MutationID,
		arg.Deleted, arg.Data, arg.CapturedAt, arg.ReceivedAt, arg.SourceVersion, arg.PayloadVersion, arg.RequestSha256)
	b.Queue(recordSupersedePrevious, arg.Sequence, arg.ReceivedAt, arg.RestaurantID, arg.Collection, arg.RecordID, arg.MutationID)
	b.Queue(recordUpsertCurrent, arg.RestaurantID, arg.MutationID, arg.Collection, arg.Sequence)
	br := sender.SendBatch(ctx, b)
	var i RecordChangeAppendRow
	appendErr := br.QueryRow().Scan(&i.RestaurantID, &i.Collection, &i.Sequence, &i.RecordID, &i.MutationID,
		&i.Deleted, &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion)
	_, supersedeErr := br.Exec()
	_, upsertErr := br.Exec()
	closeErr := br.Close()
	// The first failure in pipeline order is the cause; the statements
	// after it only report the aborted transaction. No row from the append
	// is not a failure of the pipeline.
	for _, err := range []error{appendErr, supersedeErr, upsertErr, closeErr} {
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return RecordChangeAppendRow{}, err
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
// either statement rolls both back (the position included). q must be a
// pool or a connection, not a transaction (whose commit would come later).
func (q *Queries) RecordIngestApply(ctx context.Context, stream StreamNextSequenceParams, arg RecordApplyChangeParams) (RecordApplyChangeRow, error) {
	sender, ok := q.db.(batchSender)
	if _, inTx := q.db.(pgx.Tx); !ok || inTx {
		return RecordApplyChangeRow{}, errors.New("db: RecordIngestApply needs a pool or connection that pipelines, outside a transaction")
	}
	b := &pgx.Batch{}
	b.Queue(streamNextSequence, stream.RestaurantID, stream.Collection, stream.ReceivedAt)
	b.Queue(recordApplyChange, arg.RecordID, arg.MutationID, arg.Deleted, arg.Data, arg.CapturedAt,
		arg.SourceVersion, arg.PayloadVersion, arg.RequestSha256, arg.RestaurantID, arg.Collection)
	br := sender.SendBatch(ctx, b)
	var next StreamNextSequenceRow
	streamErr := br.QueryRow().Scan(&next.LastSequence, &next.LastReceivedAt)
	var i RecordApplyChangeRow
	applyErr := br.QueryRow().Scan(&i.RestaurantID, &i.Collection, &i.Sequence, &i.RecordID, &i.MutationID,
		&i.Deleted, &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion)
	closeErr := br.Close()
	// The first failure in pipeline order is the cause; the statement after
	// it only reports the aborted transaction.
	for _, err := range []error{streamErr, applyErr, closeErr} {
		if err != nil {
			return RecordApplyChangeRow{}, err
		}
	}
	return i, nil
}
