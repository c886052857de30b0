package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// IngestOutcome is one mutation's answer in RecordIngestMany: what
// RecordIngest would have returned for it.
type IngestOutcome struct {
	Envelope wire.Envelope
	How      Ingested
	Err      error
}

// RecordIngestMany applies mutations in order, each by RecordIngest's
// rules (replay or conflict by mutation id, no backfill, receivedAt raised
// along its stream, positions gapless), not atomically: each mutation
// commits or fails on its own, and one refused never stops the others. It
// answers one outcome per mutation. receivedAt[i] is mutation i's
// receive time.
//
// RecordIngest costs a mutation two or three round trips; this costs a
// batch a few: the replay checks of all mutations in one statement
// (RecordChangesByMutations), the enablement of each restaurant with live
// event records once, then StreamNextSequence and RecordApplyChange of
// every new mutation in one pipeline with a Sync after each pair (one
// implicit transaction each, as RecordIngest's; pgrows.RecordIngestApplyEach
// says why a Sync per pair). What needs more stays RecordIngest's own
// path, in its place in the order: a live record of a file-carrying
// collection (its asset is normalised under the stream lock) and every
// mutation on Citus. A mutation id taken between the check and the write
// (by another request, or by an earlier mutation of the same call) fails
// its write whole, and is answered as the replay or conflict it is, with
// one more round trip.
//
// It stops at the first failure of the service (a 5xx: the database
// lost, an error of ours), as a client sending the mutations one by one
// would: the mutations after it are not tried (ErrNotTried), except those
// already sent in the same pipeline, which the server applies or refuses
// as usual and whose outcomes are answered. A failure of the connection
// fails the mutation it met and every later one of the pipeline; some of
// those may have been applied, as with a request cut after its commit:
// resending them replays them.
func (s *Store) RecordIngestMany(ctx context.Context, ms []Mutation, receivedAt []int64) []IngestOutcome {
	out := make([]IngestOutcome, len(ms))
	if len(ms) == 0 {
		return out
	}
	citus, err := s.onCitus(ctx, s.q)
	if err != nil {
		return failOutcomes(out, 0, translate(err))
	}
	if citus {
		for i, m := range ms {
			out[i].Envelope, out[i].How, out[i].Err = s.RecordIngest(ctx, m, receivedAt[i])
			if apperr.Failed(out[i].Err) {
				return failOutcomes(out, i+1, ErrNotTried)
			}
		}
		return out
	}
	prev, err := s.changesByMutation(ctx, ms)
	if err != nil {
		return failOutcomes(out, 0, err)
	}
	enabled := map[string]enablement{}
	var run []int // mutations waiting for the pipeline, in order
	for i, m := range ms {
		if c, ok := prev[changeID{m.RestaurantID, m.MutationID}]; ok {
			out[i].Envelope, out[i].How, out[i].Err = replayOf(c, m)
			continue
		}
		if m.Events && !m.Deleted {
			if out[i].Err = s.noBackfillOnce(ctx, enabled, m); apperr.Failed(out[i].Err) {
				// The mutations before it are applied first, as one by one.
				s.applyRun(ctx, ms, receivedAt, run, out)
				return failOutcomes(out, i+1, ErrNotTried)
			} else if out[i].Err != nil {
				continue
			}
		}
		if m.CarriesFiles && !m.Deleted {
			// RecordIngest's own transaction, after the mutations before it.
			if !s.applyRun(ctx, ms, receivedAt, run, out) {
				return failOutcomes(out, i, ErrNotTried)
			}
			run = run[:0]
			out[i].Envelope, out[i].How, out[i].Err = s.ingestNew(ctx, m, receivedAt[i])
			if apperr.Failed(out[i].Err) {
				return failOutcomes(out, i+1, ErrNotTried)
			}
			continue
		}
		run = append(run, i)
	}
	s.applyRun(ctx, ms, receivedAt, run, out)
	return out
}

// ErrNotTried is the outcome of a mutation RecordIngestMany did not try
// because the service failed on one before it. A client never hears it:
// the batch is answered with that failure.
var ErrNotTried = apperr.New(apperr.Internal, "Not tried: the service failed on an item before it.")

// changeID is a change's identity: its restaurant and mutation id.
type changeID struct{ restaurant, mutation string }

// changesByMutation reads the changes the mutation ids of ms produced, if
// any: one statement per restaurant (a batch has one).
func (s *Store) changesByMutation(ctx context.Context, ms []Mutation) (map[changeID]db.RecordChange, error) {
	ids := map[string][]string{}
	var order []string
	for _, m := range ms {
		if _, ok := ids[m.RestaurantID]; !ok {
			order = append(order, m.RestaurantID)
		}
		ids[m.RestaurantID] = append(ids[m.RestaurantID], m.MutationID)
	}
	out := map[changeID]db.RecordChange{}
	for _, r := range order {
		rows, err := s.q.RecordChangesByMutations(ctx, db.RecordChangesByMutationsParams{RestaurantID: r, MutationIds: ids[r]})
		if err != nil {
			return nil, translate(err)
		}
		for _, c := range rows {
			out[changeID{c.RestaurantID, c.MutationID}] = c
		}
	}
	return out, nil
}

// noBackfillOnce is noBackfill with each restaurant's enablement read
// once per call of RecordIngestMany (enabled keeps it, or the error that
// reading it met).
func (s *Store) noBackfillOnce(ctx context.Context, enabled map[string]enablement, m Mutation) error {
	e, ok := enabled[m.RestaurantID]
	if !ok {
		r, err := s.q.RestaurantGet(ctx, m.RestaurantID)
		e = enablement{at: r.EnabledAt.UnixMilli(), err: translate(err)}
		enabled[m.RestaurantID] = e
	}
	if e.err != nil {
		return e.err
	}
	return backfill(e.at, m.CapturedAt, "/capturedAt")
}

// enablement is when a restaurant was enabled (epoch ms), or why that
// could not be read.
type enablement struct {
	at  int64
	err error
}

// applyRun writes the mutations of run (indexes into ms, none seen before)
// in one pipeline and fills their outcomes. It reports whether the service
// held: false when any of them met a failure of the service (5xx), the
// connection's included (then every later one of the run met it too).
func (s *Store) applyRun(ctx context.Context, ms []Mutation, receivedAt []int64, run []int, out []IngestOutcome) bool {
	if len(run) == 0 {
		return true
	}
	streams := make([]db.StreamNextSequenceParams, len(run))
	args := make([]db.RecordApplyChangeParams, len(run))
	for j, i := range run {
		m := ms[i]
		streams[j] = db.StreamNextSequenceParams{RestaurantID: m.RestaurantID, Collection: m.Collection, ReceivedAt: receivedAt[i]}
		args[j] = applyChangeParams(db.RecordChangeAppendParams{RestaurantID: m.RestaurantID, Collection: m.Collection,
			RecordID: m.RecordID, MutationID: m.MutationID, Deleted: m.Deleted, Data: m.Data, CapturedAt: m.CapturedAt,
			PayloadVersion: m.PayloadVersion, RequestSha256: m.RequestSHA256})
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		for _, i := range run {
			out[i] = IngestOutcome{Err: translate(err)}
		}
		return false
	}
	applied := pgrows.RecordIngestApplyEach(ctx, conn.Conn(), streams, args)
	conn.Release()
	held := true
	for j, i := range run {
		out[i] = s.appliedOutcome(ctx, ms[i], applied[j])
		held = held && !apperr.Failed(out[i].Err)
	}
	return held
}

// appliedOutcome is a mutation's outcome from its write in the pipeline.
func (s *Store) appliedOutcome(ctx context.Context, m Mutation, a pgrows.Applied) (o IngestOutcome) {
	switch {
	case a.Err == nil:
		o.Envelope, o.How = appliedVersion(db.RecordChangeAppendRow(a.Row)).envelope(), Applied
	case errors.Is(a.Err, pgx.ErrNoRows):
		// A statement that returned nothing: a failure of this change, not
		// a missing row a client asked for (no 404), nor the connection's.
		o.Err = errors.New("store: a statement of the change returned no row")
	case errors.Is(mutationTaken(a.Err), pgx.ErrNoRows):
		// Taken meanwhile: by another request, or by a mutation before it
		// in this call.
		var ok bool
		o.Envelope, o.How, ok, o.Err = s.replayed(ctx, m)
		if o.Err == nil && !ok {
			o.Err = errors.New("store: the mutation id was taken, yet no change carries it")
		}
	default:
		o.Err = translate(a.Err)
	}
	return o
}

// failOutcomes gives err to every outcome from i on.
func failOutcomes(out []IngestOutcome, i int, err error) []IngestOutcome {
	for ; i < len(out); i++ {
		out[i] = IngestOutcome{Err: err}
	}
	return out
}
