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

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
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
	br := sender.SendBatch(ctx, b)
	var i db.RecordChangeAppendRow
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
	b.Queue(db.StreamNextSequence, stream.RestaurantID, stream.Collection, stream.ReceivedAt)
	b.Queue(db.RecordApplyChange, arg.RecordID, arg.MutationID, arg.Deleted, arg.Data, arg.CapturedAt,
		arg.SourceVersion, arg.PayloadVersion, arg.RequestSha256, arg.RestaurantID, arg.Collection)
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
