// A page of the key-wide records feed reads the first pages of many small streams, and
// sqlc has no batch spanning several statements, so the reads are sent as
// one pipeline of the walk's and delivery changes' own compiled
// statements (their rules are not copied). Arguments go by position, as
// in sqlc's functions; TestPipelinesAgreeWithSqlc holds them to sqlc's.

package pgrows

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// FeedRead is one stream read of a feed page: a page of a collection walk
// (RecordWalkFirstPage without Pinned, which pins the stream's head;
// RecordWalkPage with it) or of a restaurant's deliveries in receive order
// (DeliveryChangesPage), at most MaxRows rows after After and, when
// MaxBytes is set, at most MaxBytes of them (the rows up to the one that
// reaches it, cut as a walk page is: walkCut, deliveryCut).
type FeedRead struct {
	RestaurantID string
	// Collection names the collection walked; empty for the deliveries.
	Collection string
	Pinned     *int64
	After      int64
	MaxRows    int32
	// MaxBytes is what is left of the page's bytes (0: no bound): the
	// rows a feed page plans from the largest item it has seen would
	// otherwise be read whole when a stream's records are larger.
	MaxBytes int64
}

// FeedRows are the rows of one FeedRead: Walk for a collection, Deliveries
// for the deliveries. Cut reports that rows were left out beyond the
// read's MaxBytes: the stream holds more than these.
type FeedRows struct {
	Walk       []db.RecordWalkPageRow
	Deliveries []db.Delivery
	Cut        bool
}

// maxBytes is r.MaxBytes as the walk statements take it (NULL: no bound).
func (r FeedRead) maxBytes() *int64 {
	if r.MaxBytes <= 0 {
		return nil
	}
	n := r.MaxBytes
	return &n
}

// FeedReads runs reads as one pipeline (one round trip however many there
// are) and returns their rows in the same order. Each statement runs on
// its own snapshot, as it would alone: a walk's pin is what makes its
// pages agree, not a shared transaction.
func FeedReads(ctx context.Context, conn db.DBTX, reads []FeedRead) ([]FeedRows, error) {
	sender, ok := conn.(batchSender)
	if !ok {
		return nil, errors.New("pgrows: FeedReads needs a pool, connection or transaction that pipelines")
	}
	b := &pgx.Batch{}
	for _, r := range reads {
		switch {
		case r.Collection == "":
			b.Queue(db.DeliveryChangesPage, r.RestaurantID, r.After, r.MaxRows)
		case r.Pinned == nil:
			b.Queue(db.RecordWalkFirstPage, r.RestaurantID, r.Collection, r.After, r.MaxRows, r.maxBytes())
		default:
			b.Queue(db.RecordWalkPage, r.RestaurantID, r.Collection, r.Pinned, r.After, r.MaxRows, r.maxBytes())
		}
	}
	br := sender.SendBatch(ctx, b)
	out := make([]FeedRows, len(reads))
	var firstErr error
	for i, r := range reads {
		rows, err := br.Query()
		if err != nil && rows != nil {
			rows.Close()
		}
		if err == nil {
			if r.Collection == "" {
				out[i].Deliveries, out[i].Cut, err = scanDeliveries(rows, nil, max(r.MaxBytes, 0))
			} else {
				cut := newWalkCut(r.maxBytes())
				out[i].Walk, out[i].Cut, err = scanWalkRows(rows, nil, &cut)
			}
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := br.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
