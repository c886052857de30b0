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
	// Summed reads a collection's page with the summed walk statement at
	// once, for a stream known to need it (RecordWalkPageInto).
	Summed bool
}

// FeedRows are the rows of one FeedRead: Walk for a collection, Deliveries
// for the deliveries. Cut reports that rows were left out beyond the
// read's MaxBytes: the stream holds more than these.
type FeedRows struct {
	Walk       []db.RecordWalkPageRow
	Deliveries []db.Delivery
	Cut        bool
	// Declined: the plain walk statement declined the read, and the
	// summed one read it.
	Declined bool
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
// pages agree, not a shared transaction. The walk pages the plain
// statements decline (a record of the stream could carry the read to its
// MaxBytes: RecordWalkPageInto) are read again by the summed statements,
// in one more pipeline, only when there are any.
func FeedReads(ctx context.Context, conn db.DBTX, reads []FeedRead) ([]FeedRows, error) {
	sender, ok := conn.(batchSender)
	if !ok {
		return nil, errors.New("pgrows: FeedReads needs a pool, connection or transaction that pipelines")
	}
	out := make([]FeedRows, len(reads))
	all := make([]int, len(reads))
	for i := range all {
		all[i] = i
	}
	declined, err := feedBatch(ctx, sender, reads, all, false, out)
	if err == nil && len(declined) > 0 {
		for _, i := range declined {
			out[i].Declined = true
		}
		if declined, err = feedBatch(ctx, sender, reads, declined, true, out); err == nil && len(declined) > 0 {
			err = errSummedDeclined
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// feedBatch runs the reads numbered which as one pipeline, the walks by
// their summed statements when summed (or when the read says so), and
// sets their rows in out. It returns the walks whose statement declined
// the page (a summed one never does).
func feedBatch(ctx context.Context, sender batchSender, reads []FeedRead, which []int, summed bool, out []FeedRows) ([]int, error) {
	b := &pgx.Batch{}
	for _, i := range which {
		r := reads[i]
		first, page := db.RecordWalkFirstPage, db.RecordWalkPage
		if summed || r.Summed {
			first, page = db.RecordWalkFirstPageSummed, db.RecordWalkPageSummed
		}
		switch {
		case r.Collection == "":
			b.Queue(db.DeliveryChangesPage, r.RestaurantID, r.After, r.MaxRows)
		case r.Pinned == nil:
			b.Queue(first, r.RestaurantID, r.Collection, r.After, r.MaxRows, r.maxBytes())
		default:
			b.Queue(page, r.RestaurantID, r.Collection, r.Pinned, r.After, r.MaxRows, r.maxBytes())
		}
	}
	br := sender.SendBatch(ctx, b)
	var (
		declined []int
		firstErr error
	)
	for _, i := range which {
		r := reads[i]
		rows, err := br.Query()
		if err != nil && rows != nil {
			rows.Close()
		}
		if err == nil {
			if r.Collection == "" {
				out[i].Deliveries, out[i].Cut, err = scanDeliveries(rows, nil, max(r.MaxBytes, 0))
			} else {
				cut := newWalkCut(r.maxBytes())
				var sum bool
				out[i].Walk, sum, err = scanWalkRows(rows, nil, &cut)
				out[i].Cut = cut.cut
				if sum {
					declined = append(declined, i)
				}
			}
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := br.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return declined, firstErr
}
