// Package mirror keeps a copy of everything an API key can read, through
// the public partner API only, as the spec's client rules say: snapshot
// walks reconciled by id and sequence with tombstones, changes cursors for
// incremental walks, deliveries by their receive-order changes cursor with
// deduplication on id, files downloaded once by digest. It is the engine
// of cmd/foodsafe-sync, and the top of its packages, each leaning only on
// those below it (TestLayers):
//
//	mirror             the sync: what a run reads, in which order, and what it keeps
//	mirror/export      the typed relations written out as Parquet or CSV
//	mirror/targets     the SQLite or PostgreSQL database the copy is kept in
//	mirror/partnerapi  the partner API's client and its resources as sent
//	mirror/typed       the typed relations, derived from the JSON Schemas
//
// It shares no code with the server on purpose, so it holds the server to
// its published contract. The one thing it takes from the repository is
// that contract itself: the JSON Schemas (schemas/) the typed relations
// are derived from.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// Syncer mirrors what a key reads into a target: it plans a run, lists
// what changed, and hands each stream to its reader (walks, the key-wide
// feed, files).
type Syncer struct {
	*session
	before  partnerapi.Stats // the client's counters when the run began
	changes lister
	walks   walker
	feed    feedReader
	catchUp catchUpReader
	files   fetcher
}

// NewSyncer builds a syncer.
func NewSyncer(c *partnerapi.Client, t *targets.Target, o Options, log *slog.Logger, p Progress) *Syncer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if p == nil {
		p = nopProgress{}
	}
	s := &session{c: c, t: t, o: o, log: log, prog: p}
	return &Syncer{session: s, changes: lister{s}, walks: walker{s}, feed: feedReader{s}, catchUp: catchUpReader{s}, files: fetcher{s}}
}

// Summary is what one run did.
type Summary struct {
	Restaurants int   `json:"restaurants"`
	Streams     int   `json:"streams"`
	Pages       int64 `json:"pages"`
	Records     int64 `json:"records"`
	Deliveries  int64 `json:"deliveries"`
	Files       int64 `json:"files"`
	FileBytes   int64 `json:"fileBytes"`
	Failed      int   `json:"failedStreams"`
	partnerapi.Stats
	DurationMS int64 `json:"durationMs"`
}

// NextRun says where the next run resumes, as the target now holds it:
// inside the key-wide first listing when one is under way (or at its
// beginning, on a first sync that applied nothing), else stream by
// stream.
func (s *Syncer) NextRun() string {
	if !s.o.feedApplies() {
		return resumeStreams
	}
	ctx := context.Background()
	if cursor, err := s.t.Streams.FeedCursor(ctx); err == nil && cursor != "" {
		return resumeFeed
	}
	if pos, err := s.t.Streams.ChangesPosition(ctx, s.o.scope()); err == nil && pos == "" {
		return resumeFresh
	}
	return resumeStreams
}

// Run mirrors once. It asks the server which of the key's streams changed
// since the last run (GET /v1/changes, from the position kept in the
// target) and walks only those whose head moved, plus any stream a
// previous run left unfinished or failed; a refresh in which nothing
// changed costs two requests however many restaurants the key reads. A
// first run (or one whose kept position the server refused) first reads
// every stream at once through the key-wide feed (feedReader). A failing
// stream is recorded in sync_state and the run goes on with the others;
// the returned error joins the failures. A run that meets its Deadline or
// MaxFailures stops there with a *StopError first among them.
func (s *Syncer) Run(parent context.Context) (Summary, error) {
	ctx, stop := context.WithCancelCause(parent)
	defer stop(nil)
	if s.o.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.o.Deadline, &StopError{Deadline: s.o.Deadline})
		defer cancel()
	}
	s.inARow, s.stop = 0, stop
	sum, err := s.run(ctx)
	if se := stopped(ctx); se != nil && parent.Err() == nil {
		if isCanceled(err) {
			err = nil // the stop says it
		}
		se.Resume = s.NextRun()
		return sum, errors.Join(se, err)
	}
	return sum, err
}

// pass is one run's account: what it did, the streams listed with their
// heads, and the streams that failed.
type pass struct {
	start    time.Time
	sum      Summary
	listed   map[targets.StreamKey]int64
	failures []error
}

// run reads the key's grants, lists what changed, walks each stream due,
// fetches the files, and keeps the listing's position once every stream
// is mirrored up to it.
func (s *Syncer) run(ctx context.Context) (Summary, error) {
	r := &pass{start: time.Now()}
	s.before = s.c.Stats() // the client counts across runs (--every)
	plans, err := s.plans(ctx)
	if err != nil {
		return s.finish(r), fatalIfUnauthorized(err)
	}
	r.sum.Restaurants = len(plans)
	position, force, err := s.position(ctx, r)
	if err != nil {
		return s.finish(r), fatalIfUnauthorized(err)
	}
	if err := s.markDue(ctx, r, plans, force); err != nil {
		return s.finish(r), err
	}
	for i := range plans {
		if err := s.syncRestaurant(ctx, r, &plans[i]); err != nil {
			return s.finish(r), errors.Join(r.failures...)
		}
	}
	if len(r.failures) == 0 && ctx.Err() == nil {
		// Only a complete run moves the position: a stream that failed is
		// walked again next time (it is unfinished), and so is everything
		// listed after an interruption.
		if err := s.t.Streams.PutChangesPosition(ctx, s.o.scope(), position); err != nil {
			return s.finish(r), err
		}
	}
	return s.finish(r), errors.Join(r.failures...)
}

// position brings the mirror to a position to list changes from (on a
// first sync, or when the kept one is refused, by reading every record
// through the key-wide feed), lists the streams that changed since into
// r.listed, and returns the position of the next listing. force: every
// listed stream is to be walked, whatever head the target holds.
func (s *Syncer) position(ctx context.Context, r *pass) (string, bool, error) {
	if _, err := s.feed.firstListing(ctx, r, false); err != nil {
		return "", false, err
	}
	if done, position, err := s.catchUp.read(ctx, r); err != nil || done {
		r.listed = caughtUp()
		return position, false, err
	}
	listed, position, force, err := s.changes.list(ctx, s.o.feedApplies())
	if errors.Is(err, errPositionRefused) {
		if _, err := s.feed.firstListing(ctx, r, true); err != nil {
			return "", false, err
		}
		listed, position, force, err = s.changes.list(ctx, false)
	}
	r.listed = listed
	return position, force, err
}

// markDue decides which streams of each plan are walked this run: those
// listed whose head moved (every one listed, with force), and those a
// previous run left unfinished; it tells the progress display how many.
func (s *Syncer) markDue(ctx context.Context, r *pass, plans []plan, force bool) error {
	held, err := s.t.Streams.Heads(ctx)
	if err != nil {
		return err
	}
	unfinished, err := s.t.Streams.Unfinished(ctx)
	if err != nil {
		return err
	}
	due := func(restaurant, stream string) bool {
		k := targets.StreamKey{Restaurant: restaurant, Stream: stream}
		head, ok := r.listed[k]
		return unfinished[k] || (ok && (force || held[k] != head))
	}
	total := 0
	for i := range plans {
		p := &plans[i]
		p.due = nil
		for _, c := range p.readable {
			if due(p.restaurant, c) {
				p.due = append(p.due, c)
			}
		}
		p.deliveriesDue = p.deliveries && due(p.restaurant, "deliveries")
		total += len(p.due)
		if p.deliveriesDue {
			total++
		}
	}
	s.prog.Plan(total)
	return nil
}

// syncRestaurant walks a restaurant's due collections, then its
// deliveries, then fetches its files. A stream that fails is recorded and
// the others go on; the error returned ends the run (a stop, a refused
// key).
func (s *Syncer) syncRestaurant(ctx context.Context, r *pass, p *plan) error {
	for _, coll := range p.due {
		n, pages, err := s.walks.collection(ctx, p.restaurant, coll)
		r.sum.Streams++
		r.sum.Records += n
		r.sum.Pages += pages
		if err := s.streamDone(ctx, r, p.restaurant, coll, err); err != nil {
			return err
		}
	}
	if p.deliveriesDue {
		n, pages, err := s.walks.deliveries(ctx, p.restaurant)
		r.sum.Streams++
		r.sum.Deliveries += n
		r.sum.Pages += pages
		if err := s.streamDone(ctx, r, p.restaurant, "deliveries", err); err != nil {
			return err
		}
	}
	if !s.o.Files {
		return nil
	}
	n, bytes, err := s.files.restaurant(ctx, *p)
	r.sum.Files += n
	r.sum.FileBytes += bytes
	if err == nil {
		err = s.t.Streams.ClearError(ctx, p.restaurant, "files")
	}
	if err != nil {
		return s.fail(ctx, r, p.restaurant, "files", err)
	}
	return nil
}

// streamDone ends a stream's walk: one that succeeded keeps the head it
// was listed at (the next run walks it only when the head moves past);
// one that failed is recorded as failed.
func (s *Syncer) streamDone(ctx context.Context, r *pass, restaurant, stream string, err error) error {
	if err == nil {
		head, ok := r.listed[targets.StreamKey{Restaurant: restaurant, Stream: stream}]
		if !ok {
			return nil
		}
		if err = s.t.Streams.PutHead(ctx, restaurant, stream, head); err == nil {
			return nil
		}
	}
	return s.fail(ctx, r, restaurant, stream, err)
}

// fail records a stream's failure and goes on with the others; it returns
// the error that ends the run instead: the run's stop, or a refused key.
// An interruption is no failure of the stream: it stopped.
func (s *Syncer) fail(ctx context.Context, r *pass, restaurant, stream string, err error) error {
	stop := stopped(ctx)
	if ctx.Err() != nil && stop == nil {
		return err
	}
	r.sum.Failed++
	if stop != nil && isCanceled(err) {
		err = stop // cut by the run's deadline: the stop says it
	} else {
		r.failures = append(r.failures, fmt.Errorf("%s %s: %w", restaurant, stream, err))
	}
	s.log.Error("stream failed", "restaurant", restaurant, "stream", stream, "error", err.Error())
	if serr := s.t.Streams.SetError(context.WithoutCancel(ctx), restaurant, stream, err.Error()); serr != nil {
		s.log.Error("recording the failure", "error", serr.Error())
	}
	s.prog.Stream(StreamEvent{Restaurant: restaurant, Stream: stream, Done: true, Failed: true})
	if stop != nil {
		return stop
	}
	if IsFatal(err) {
		return err
	}
	return nil
}

func (s *Syncer) finish(r *pass) Summary {
	r.sum.Stats = s.c.Stats().Since(s.before)
	r.sum.DurationMS = time.Since(r.start).Milliseconds()
	s.prog.Done(r.sum)
	return r.sum
}
