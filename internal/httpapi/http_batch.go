package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
)

// The needs of a batch's items: their single PUTs'.
var (
	snapshotWrite = collectionScope("write")
	deliveryWrite = scopes(catalog.DeliveriesWrite)
)

// BatchResult is one item's answer in a batch: what its single PUT would
// have answered, as data (with replayed for the Idempotent-Replayed
// header) or as problem.
type BatchResult struct {
	Index         int    `json:"index"`
	Status        int    `json:"status"`
	Replayed      *bool  `json:"replayed,omitempty"`
	ReplayedState string `json:"replayedState,omitempty"`
	// Data is the single PUT's data: an envelope, or a delivery.
	Data    any      `json:"data,omitempty"`
	Problem *Problem `json:"problem,omitempty"`
}

// batchCost is what a batch of n items costs of a budget of limit
// requests a minute: one request per started BatchItemsPerRequest items,
// never more than the whole budget (so a full budget always admits it).
func batchCost(n int, limit int64) int64 {
	return min(int64((n+BatchItemsPerRequest-1)/BatchItemsPerRequest), max(limit, 1))
}

// ingestBatch is POST /v1/ingest/restaurants/:restaurantId/batch: many
// snapshots and deliveries in one request, each applied in order as its
// single PUT would apply it, with its own answer. Not atomic: an item
// refused never stops the next. The whole batch is refused (before any
// item is applied) only when it is malformed or its cost is over the
// budget left.
func (a *API) ingestBatch(c *gin.Context) error {
	if err := jsonContentType(c); err != nil {
		return err
	}
	body, err := readBodyUpTo(c, a.cfg.MaxBatchBytes)
	if err != nil {
		return err
	}
	items, err := parseBatch(body)
	if err != nil {
		return err
	}
	if !a.admitBatch(c, len(items)) {
		return nil
	}
	applied := a.batchApply(c, principal(c), c.Param("restaurantId"), items)
	out := make([]BatchResult, len(items))
	var failure error
	for i, it := range items {
		r, err := applied[i].BatchResult, applied[i].err
		if failure != nil {
			// Answered by the failure, yet applied when already sent to
			// the database with it: counted as such.
			if err == nil {
				a.countItem(c, it, r, nil)
			}
			continue
		}
		a.countItem(c, it, r, err)
		if err != nil {
			if apperr.Failed(err) {
				// The store failed: the items after it were not tried, or
				// were applied (or refused) in the same pipeline. The
				// batch's answer is the failure; resending it is safe.
				failure = err
				continue
			}
			pr := a.problemFor(c, err)
			pr.Errors = itemPointers(pr.Errors, i, it)
			r = BatchResult{Status: pr.Status, Problem: &pr}
		}
		r.Index = i
		out[i] = r
	}
	if failure != nil {
		return failure
	}
	c.PureJSON(http.StatusOK, List[BatchResult]{Data: out})
	return nil
}

// countItem counts an item's write as its single PUT would. A client gone
// mid-batch fails its item as it fails a single PUT: counted
// client_closed, not internal.
func (a *API) countItem(c *gin.Context, it batchItem, r BatchResult, err error) {
	o, reason := writeOutcome(err, r.Replayed != nil && *r.Replayed, c.Request.Context().Err() != nil)
	w, col := metrics.WriteMutation, it.collection
	if it.delivery {
		w, col = metrics.WriteDelivery, ""
	}
	a.metrics.IngestWrite(w, col, o, reason)
}

// itemApplied is an item's answer, or its error.
type itemApplied struct {
	BatchResult
	err error
}

// batchApply judges every item by its single PUT's access rule, size limit
// and validation, and applies those that pass, in array order: each run of
// snapshots between deliveries through the store in one go
// (store.RecordIngestMany: its statements pipelined, not a round trip
// each), each delivery by its single PUT's path. Once the store has failed
// (a 5xx), no more work starts: the items after are not tried
// (store.ErrNotTried), but those already sent to the database in the same
// pipeline as the failed one were applied or refused there, and keep
// their outcomes (ingestBatch answers the failure and counts those
// applied).
func (a *API) batchApply(c *gin.Context, p *auth.Principal, restaurant string, items []batchItem) []itemApplied {
	ctx := c.Request.Context()
	out := make([]itemApplied, len(items))
	var (
		run []int // snapshots waiting for the store, in order
		ms  []store.Mutation
		at  []int64
	)
	flush := func() bool {
		if len(run) == 0 {
			return true
		}
		res := a.store.RecordIngestMany(ctx, ms, at)
		ok := true
		for j, i := range run {
			out[i] = snapshotApplied(res[j])
			ok = ok && !apperr.Failed(res[j].Err)
		}
		run, ms, at = run[:0], ms[:0], at[:0]
		return ok
	}
	for i, it := range items {
		n := snapshotWrite
		if it.delivery {
			n = deliveryWrite
		}
		if err := allow(p, batchParams{restaurant: restaurant, collection: it.collection}, n); err != nil {
			out[i].err = err
			continue
		}
		if int64(len(it.body)) > a.cfg.MaxBodyBytes {
			out[i].err = apperr.New(apperr.PayloadTooLarge, "The item exceeds the limit of %d bytes of a single body.", a.cfg.MaxBodyBytes)
			continue
		}
		id, mutationID := identity(it.body)
		if it.delivery {
			if !flush() {
				return notTried(out, i)
			}
			d, replayed, err := a.deliveryIngest(ctx, restaurant, id, it.body)
			out[i] = itemApplied{BatchResult{Status: http.StatusOK, Replayed: &replayed, Data: d}, err}
			if err != nil && apperr.Failed(err) {
				return notTried(out, i+1)
			}
			continue
		}
		k := store.RecordKey{RestaurantID: restaurant, Collection: it.collection, RecordID: id}
		m, receivedAt, err := a.snapshotMutation(k, mutationID, it.body)
		if err != nil {
			out[i].err = err
			continue
		}
		run, ms, at = append(run, i), append(ms, m), append(at, receivedAt)
	}
	flush()
	return out
}

// notTried marks the items from i on as not tried.
func notTried(out []itemApplied, i int) []itemApplied {
	for ; i < len(out); i++ {
		out[i] = itemApplied{err: store.ErrNotTried}
	}
	return out
}

// snapshotApplied is a snapshot's answer from its outcome in the store.
func snapshotApplied(o store.IngestOutcome) itemApplied {
	if o.Err != nil {
		return itemApplied{err: o.Err}
	}
	replayed := o.How != store.Applied
	r := BatchResult{Status: http.StatusOK, Replayed: &replayed, Data: o.Envelope}
	if o.How == store.ReplayedCompacted {
		r.ReplayedState = "compacted"
	}
	return itemApplied{BatchResult: r}
}

// identity is the id and mutationId of an item's body, "" where absent,
// not strings, or the text no object: what the item's single PUT would
// carry in its path. Its validation reports the rest.
func identity(body []byte) (id, mutationID string) {
	var m struct {
		ID         any `json:"id"`
		MutationID any `json:"mutationId"`
	}
	_ = json.Unmarshal(body, &m) // a body that does not decode is the validator's to describe
	id, _ = m.ID.(string)
	mutationID, _ = m.MutationID.(string)
	return id, mutationID
}

// itemPointers makes an item's violations point into the batch: /data/x
// of the third item's snapshot is /items/2/snapshot/data/x.
func itemPointers(errs []apperr.FieldError, i int, it batchItem) []apperr.FieldError {
	member := "snapshot"
	if it.delivery {
		member = "delivery"
	}
	prefix := "/items/" + strconv.Itoa(i) + "/" + member
	for j := range errs {
		if errs[j].Parameter == "" {
			errs[j].Pointer = prefix + errs[j].Pointer
		}
	}
	return errs
}

// admitBatch counts a batch of n items against the key's budget beyond
// the one request authentication counted, whole or not at all, and
// answers 429 when it does not fit. It reports whether to go on.
func (a *API) admitBatch(c *gin.Context, n int) bool {
	p := principal(c)
	cost := batchCost(n, int64(a.cfg.RateLimit))
	if cost <= 1 {
		return true
	}
	bucket := string(metrics.BucketKey) + ":" + p.KeyPublicID
	res := a.limiter.TakeMore(c.Request.Context(), bucket, cost-1)
	if res.Reached {
		a.refuseBatch(c, res, n, cost)
		return false
	}
	setRateHeaders(c, res, a.now())
	return true
}
