// Package mirror keeps a copy of everything an API key can read, through
// the public partner API only, as the spec's client rules say: snapshot
// walks reconciled by id and sequence with tombstones, changes cursors for
// incremental walks, deliveries by time window with an overlap and
// deduplication on id, files downloaded once by digest; and it keeps the
// typed relations and writes the Parquet export analysts read. It is the
// engine of cmd/foodsafe-sync; it shares no code with the server on
// purpose, so it holds the server to its published contract. The one
// thing it takes from the repository is that contract itself: the JSON
// Schemas (schemas/) the typed relations are derived from.
package mirror

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PageSize is the limit of every list request: the largest the API takes,
// so a sync costs the fewest requests. It never changes, because a walk's
// cursors are bound to their limit.
const PageSize = 100

// Options say what to mirror and how.
type Options struct {
	Restaurants []string // empty: every restaurant the key reaches
	Collections []string // empty: every collection the key reads
	Files       bool
	FilesDir    string
	Tombstones  TombstoneMode
	// Overlap is no longer used: deliveries follow the receive-order
	// changes cursor, which misses no late upload. Kept so that command
	// lines that set --overlap still run.
	Overlap time.Duration
	// DeliveriesSince: deliveries that occurred before it (epoch ms) are
	// not mirrored.
	DeliveriesSince int64
	// Deadline bounds each run (0: none). A run that meets it stops where
	// it is, keeping every page applied, and fails: the next run resumes.
	Deadline time.Duration
	// MaxFailures ends a run once that many requests in a row have failed
	// after their own retries (0: no limit). A server that stays down,
	// or fails everything, then costs a few requests' retries instead of
	// every remaining stream's and file's.
	MaxFailures int
	Now         func() time.Time
}

// Syncer mirrors what a key reads into a target.
type Syncer struct {
	c      *Client
	t      *Target
	o      Options
	log    *slog.Logger
	prog   Progress
	before Stats // the client's counters when the run began
	// inARow counts the run's requests that failed in a row; stop ends
	// the run with a *StopError.
	inARow int
	stop   context.CancelCauseFunc
}

// NewSyncer builds a syncer.
func NewSyncer(c *Client, t *Target, o Options, log *slog.Logger, p Progress) *Syncer {
	if o.Now == nil {
		o.Now = time.Now
	}
	if p == nil {
		p = nopProgress{}
	}
	return &Syncer{c: c, t: t, o: o, log: log, prog: p}
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
	Stats
	DurationMS int64 `json:"durationMs"`
}

// errFatal marks failures that end the whole run (the key no longer
// works): every other stream would fail the same way.
type errFatal struct{ error }

func (e errFatal) Unwrap() error { return e.error }

// IsFatal reports whether a run's error means no later run can succeed
// either (the key was refused), so a --every loop should stop.
func IsFatal(err error) bool {
	var fe errFatal
	return errors.As(err, &fe)
}

// StopError is why a run ended before its end of its own accord: its
// deadline passed, or too many requests failed in a row. Everything
// applied before stays; Resume says where the next run takes up. It is
// not fatal: --every tries again at its next interval.
type StopError struct {
	Deadline time.Duration // the deadline that passed (0: not the reason)
	Failures int           // the requests that failed in a row (0: not the reason)
	Last     error         // the last of them
	Resume   string        // where the next run resumes (Syncer.NextRun)
}

func (e *StopError) Error() string {
	resume := e.Resume
	if resume == "" {
		resume = resumeStreams
	}
	if e.Deadline > 0 {
		return fmt.Sprintf("run stopped: its deadline of %s passed (--deadline); %s", e.Deadline, resume)
	}
	return fmt.Sprintf("run stopped: %d requests in a row failed after their retries (--max-failures); %s; the last: %v", e.Failures, resume, e.Last)
}

// resumeStreams is where the next run resumes when no key-wide listing is
// under way.
const resumeStreams = "every page applied is kept: the next run lists the streams that changed since the last complete run and resumes each unfinished one after its last applied page"

// resumeFeed is where it resumes when one is.
const resumeFeed = "every page applied is kept: the next run resumes the first listing of every record (GET /v1/records) after its last applied page"

// resumeFresh is where it resumes when a first sync applied nothing.
const resumeFresh = "no page of the first listing was applied: the next run starts it from its beginning"

// NextRun says where the next run resumes, as the target now holds it:
// inside the key-wide first listing when one is under way (or at its
// beginning, on a first sync that applied nothing), else stream by
// stream.
func (s *Syncer) NextRun() string {
	if !s.feedApplies() {
		return resumeStreams
	}
	ctx := context.Background()
	if cursor, err := s.t.feedCursor(ctx); err == nil && cursor != "" {
		return resumeFeed
	}
	if pos, err := s.t.changesPosition(ctx, s.scope()); err == nil && pos == "" {
		return resumeFresh
	}
	return resumeStreams
}

// stopped is the *StopError that ended the run of ctx, if one did.
func stopped(ctx context.Context) *StopError {
	var se *StopError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// isCanceled reports whether err is only the end of its context.
func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// get is Client.Get counted against the run's failures in a row.
func (s *Syncer) get(ctx context.Context, path string, q url.Values, out any) error {
	err := s.c.Get(ctx, path, q, out)
	s.tally(ctx, err)
	return err
}

// tally counts a request's outcome once its retries are over: an answer
// the server gave (a success or a 4xx) clears the count, a failure (no
// answer, a 5xx, an answer that is not what the API documents) adds to
// it, and MaxFailures in a row stop the run.
func (s *Syncer) tally(ctx context.Context, err error) {
	var ae *APIError
	var se statusError
	switch {
	case ctx.Err() != nil:
		return // stopped or interrupted: not the request's failure
	case err == nil, errors.Is(err, errURLExpired),
		errors.As(err, &ae) && ae.Status < 500, errors.As(err, &se) && se.status < 500:
		s.inARow = 0
		return
	}
	s.inARow++
	if s.o.MaxFailures > 0 && s.inARow >= s.o.MaxFailures && s.stop != nil {
		s.stop(&StopError{Failures: s.inARow, Last: err})
	}
}

// collectionName is what a collection name must look like to become a
// table name (the server's 24 all do).
var collectionName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// reservedTables are the mirror's own tables, which no collection's table
// may take.
var reservedTables = map[string]bool{"sync_state": true, "deliveries": true, "files": true, "file_links": true, "mirror_meta": true,
	"stream_heads": true, "typed_relations": true}

// tableAllowed reports whether a collection's table may be made: not one
// of the mirror's own, not one of the typed layer's names.
func tableAllowed(collection string) bool {
	t := TableName(collection)
	return collectionName.MatchString(collection) && !reservedTables[t] && !strings.HasPrefix(t, typedPrefix)
}

// fileCollections carry files (spec 4.4).
var fileCollections = []string{"cleaning-task-pictures", "traceability-labels", "drive-files"}

type grant struct {
	RestaurantID string   `json:"restaurantId"`
	Scopes       []string `json:"scopes"`
}

// plan is one restaurant's work.
type plan struct {
	restaurant string
	// readable are the collections the run may mirror there, whose
	// files it fetches; due are those it walks this run (their heads
	// moved, or a walk is unfinished).
	readable []string
	due      []string
	// deliveries: the key reads them there (and their images, with
	// images); deliveriesDue: they are walked this run.
	deliveries, deliveriesDue bool
	images                    bool
}

// Run mirrors once. It asks the server which of the key's streams changed
// since the last run (GET /v1/changes, from the position kept in the
// target) and walks only those whose head moved, plus any stream a
// previous run left unfinished or failed; a refresh in which nothing
// changed costs two requests however many restaurants the key reads. A
// first run (or one whose kept position the server refused) first reads
// every stream at once through the key-wide feed (feed.go). A failing
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
	listed   map[streamKey]int64
	failures []error
}

// run reads the key's grants, lists what changed, walks each stream due,
// fetches the files, and keeps the listing's position once every stream
// is mirrored up to it.
func (s *Syncer) run(ctx context.Context) (Summary, error) {
	r := &pass{start: time.Now()}
	s.before = s.c.Stats() // the client counts across runs (--every)
	plans, err := s.plan(ctx)
	if err != nil {
		return s.finish(r), s.fatalIfUnauthorized(err)
	}
	r.sum.Restaurants = len(plans)
	position, force, err := s.position(ctx, r)
	if err != nil {
		return s.finish(r), s.fatalIfUnauthorized(err)
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
		if err := s.t.putChangesPosition(ctx, s.scope(), position); err != nil {
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
	if _, err := s.firstListing(ctx, r, false); err != nil {
		return "", false, err
	}
	listed, position, force, err := s.listChanges(ctx, s.feedApplies())
	if errors.Is(err, errPositionRefused) {
		if _, err := s.firstListing(ctx, r, true); err != nil {
			return "", false, err
		}
		listed, position, force, err = s.listChanges(ctx, false)
	}
	r.listed = listed
	return position, force, err
}

// markDue decides which streams of each plan are walked this run: those
// listed whose head moved (every one listed, with force), and those a
// previous run left unfinished; it tells the progress display how many.
func (s *Syncer) markDue(ctx context.Context, r *pass, plans []plan, force bool) error {
	held, err := s.t.heads(ctx)
	if err != nil {
		return err
	}
	unfinished, err := s.t.unfinished(ctx)
	if err != nil {
		return err
	}
	due := func(restaurant, stream string) bool {
		k := streamKey{restaurant, stream}
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
		n, pages, err := s.syncCollection(ctx, p.restaurant, coll)
		r.sum.Streams++
		r.sum.Records += n
		r.sum.Pages += pages
		if err := s.streamDone(ctx, r, p.restaurant, coll, err); err != nil {
			return err
		}
	}
	if p.deliveriesDue {
		n, pages, err := s.syncDeliveries(ctx, p.restaurant)
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
	n, bytes, err := s.syncFiles(ctx, *p)
	r.sum.Files += n
	r.sum.FileBytes += bytes
	if err == nil {
		err = s.t.ClearError(ctx, p.restaurant, "files")
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
		head, ok := r.listed[streamKey{restaurant, stream}]
		if !ok {
			return nil
		}
		if err = s.t.putHead(ctx, s.t.db, restaurant, stream, head); err == nil {
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
	if serr := s.t.SetError(context.WithoutCancel(ctx), restaurant, stream, err.Error()); serr != nil {
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
	r.sum.Stats = s.c.Stats().since(s.before)
	r.sum.DurationMS = time.Since(r.start).Milliseconds()
	s.prog.Done(r.sum)
	return r.sum
}

// streamKey names a stream of a restaurant: a collection, or deliveries.
type streamKey struct{ restaurant, stream string }

// streamChange is an item of GET /v1/changes.
type streamChange struct {
	RestaurantID string `json:"restaurantId"`
	Stream       string `json:"stream"`
	Head         string `json:"head"`
}

type changesPage struct {
	Data          []streamChange `json:"data"`
	NextCursor    *string        `json:"nextCursor"`
	ChangesCursor *string        `json:"changesCursor"`
}

// scope is what a kept changes position was listed for: a position kept
// by a run that mirrored other restaurants or collections says nothing of
// the streams this one adds, so those runs list from the beginning.
func (s *Syncer) scope() string {
	r, c := slices.Clone(s.o.Restaurants), slices.Clone(s.o.Collections)
	slices.Sort(r)
	slices.Sort(c)
	return strings.Join(r, ",") + ";" + strings.Join(c, ",")
}

// listChanges reads GET /v1/changes to its last page from the position
// the target keeps (every stream that holds anything, on a first run):
// the streams that changed, with their heads, and the position of the
// next listing. force (a kept position the server refused: its data was
// restored, or its cursor key changed) asks for every listed stream to be
// walked, whatever head the target holds; with toFeed, a refused position
// is errPositionRefused instead, for the key-wide feed to rebuild from.
func (s *Syncer) listChanges(ctx context.Context, toFeed bool) (map[streamKey]int64, string, bool, error) {
	cursor, err := s.t.changesPosition(ctx, s.scope())
	if err != nil {
		return nil, "", false, err
	}
	listed := map[streamKey]int64{}
	force := false
	for pages := 0; ; pages++ {
		q := url.Values{"limit": {strconv.Itoa(PageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page changesPage
		err := s.get(ctx, "/v1/changes", q, &page)
		switch {
		case err == nil:
		case cursor != "" && IsStatus(err, 400) && !force && toFeed:
			s.log.Warn("changes position refused; reading every record again through the key-wide feed", "error", err.Error())
			return nil, "", false, errPositionRefused
		case cursor != "" && IsStatus(err, 400) && !force:
			s.log.Warn("changes position refused; listing every stream and walking each from its own cursor", "error", err.Error())
			cursor, force, listed = "", true, map[streamKey]int64{}
			continue
		default:
			return nil, "", false, err
		}
		for _, c := range page.Data {
			head, err := position(c.Head)
			if err != nil {
				return nil, "", false, fmt.Errorf("GET /v1/changes: stream %s of %s has a malformed head %q", c.Stream, c.RestaurantID, c.Head)
			}
			listed[streamKey{c.RestaurantID, c.Stream}] = head
		}
		switch {
		case page.NextCursor != nil:
			cursor = *page.NextCursor
		case page.ChangesCursor == nil || *page.ChangesCursor == "":
			return nil, "", false, fmt.Errorf("the last page of GET /v1/changes carries no changesCursor")
		default:
			return listed, *page.ChangesCursor, force, nil
		}
	}
}

// plan reads the key's grants and decides which streams this run may
// mirror: the restaurants asked for (or every one the key reaches), with
// the collections of their read scopes (or those asked for) and their
// deliveries. markDue then picks the streams that changed.
func (s *Syncer) plan(ctx context.Context) ([]plan, error) {
	var page struct {
		Data []grant `json:"data"`
	}
	if err := s.get(ctx, "/v1/restaurants", nil, &page); err != nil {
		return nil, err
	}
	reach := map[string]grant{}
	for _, g := range page.Data {
		reach[g.RestaurantID] = g
	}
	wanted := s.o.Restaurants
	if len(wanted) == 0 {
		for _, g := range page.Data {
			wanted = append(wanted, g.RestaurantID)
		}
	}
	plans := make([]plan, 0, len(wanted))
	for _, r := range wanted {
		g, ok := reach[r]
		if !ok {
			return nil, fmt.Errorf("the key does not reach restaurant %q (it reaches %d restaurant(s); see GET /v1/restaurants)", r, len(page.Data))
		}
		p, err := s.planOf(g)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// planOf is what the run may mirror of one granted restaurant: what its
// scopes read, narrowed to the collections asked for.
func (s *Syncer) planOf(g grant) (plan, error) {
	p := plan{restaurant: g.RestaurantID}
	readable := map[string]bool{}
	for _, sc := range g.Scopes {
		switch sc {
		case "deliveries:read":
			p.deliveries = true
		case "delivery-images:read":
			p.images = true
		default:
			// A collection is readable with its read scope; GET
			// /v1/changes names the streams that hold anything, so a
			// scope of something else never becomes a walk.
			if c, ok := strings.CutSuffix(sc, ":read"); ok && s.tableFor(g.RestaurantID, c) {
				readable[c] = true
			}
		}
	}
	if len(s.o.Collections) == 0 {
		for c := range readable {
			p.readable = append(p.readable, c)
		}
		slices.Sort(p.readable)
		return p, nil
	}
	for _, c := range s.o.Collections {
		if c == "deliveries" {
			continue
		}
		if !readable[c] {
			return plan{}, fmt.Errorf("the key cannot read collection %q of restaurant %q (no %s:read scope)", c, p.restaurant, c)
		}
		p.readable = append(p.readable, c)
	}
	asked := slices.Contains(s.o.Collections, "deliveries")
	if asked && !p.deliveries {
		return plan{}, fmt.Errorf("the key cannot read the deliveries of restaurant %q (no deliveries:read scope)", p.restaurant)
	}
	p.deliveries = p.deliveries && asked
	return p, nil
}

// tableFor reports whether collection c can be mirrored (its name can be
// a table here), saying so when it cannot.
func (s *Syncer) tableFor(restaurant, c string) bool {
	if tableAllowed(c) {
		return true
	}
	s.log.Warn("a collection whose name cannot be a table here is skipped", "restaurant", restaurant, "collection", c)
	return false
}

// envelope is a record as the API sends it (spec 2.3); unknown members
// are ignored, as the versioning rules ask.
type envelope struct {
	ID             string          `json:"id"`
	Data           json.RawMessage `json:"data"`
	Deleted        bool            `json:"deleted"`
	CapturedAt     string          `json:"capturedAt"`
	ReceivedAt     string          `json:"receivedAt"`
	Sequence       string          `json:"sequence"`
	MutationID     string          `json:"mutationId"`
	SourceVersion  *string         `json:"sourceVersion"`
	PayloadVersion int64           `json:"payloadVersion"`
}

type walkPage struct {
	Data          []envelope `json:"data"`
	NextCursor    *string    `json:"nextCursor"`
	ChangesCursor *string    `json:"changesCursor"`
}

// digits is a sequence or a head: a digit string.
var digits = regexp.MustCompile(`^[0-9]{1,64}$`)

// position reads a sequence or a head (a digit string) as the number the
// target keeps: the API's positions are 64-bit (at most 19 digits), so an
// analyst's ORDER BY sequence needs no cast; a longer one is refused,
// saying so, rather than kept in a form that would not sort.
func position(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || !digits.MatchString(s) {
		return 0, fmt.Errorf("position %q is not a number of 64 bits (the positions the mirror keeps are)", s)
	}
	return n, nil
}

// record checks an envelope and turns it into a stored record; withFiles
// says the collection carries files, so data.asset is read here (the rest
// of data is read when the page is applied, for the typed relations).
func (e envelope) record(withFiles bool) (Record, error) {
	if e.ID == "" || !digits.MatchString(e.Sequence) {
		return Record{}, fmt.Errorf("record %q: malformed id or sequence %q", e.ID, e.Sequence)
	}
	seq, err := position(e.Sequence)
	if err != nil {
		return Record{}, fmt.Errorf("record %q: %w", e.ID, err)
	}
	captured, err1 := strconv.ParseInt(e.CapturedAt, 10, 64)
	received, err2 := strconv.ParseInt(e.ReceivedAt, 10, 64)
	if err1 != nil || err2 != nil {
		return Record{}, fmt.Errorf("record %q: malformed capturedAt or receivedAt", e.ID)
	}
	r := Record{ID: e.ID, Sequence: seq, Deleted: e.Deleted, CapturedAt: captured, ReceivedAt: received,
		MutationID: e.MutationID, SourceVersion: e.SourceVersion, PayloadVersion: e.PayloadVersion}
	if !e.Deleted {
		if len(e.Data) == 0 || string(e.Data) == "null" {
			return Record{}, fmt.Errorf("record %q: a live record without data", e.ID)
		}
		r.Data = e.Data
		if !withFiles {
			return r, nil
		}
		var a struct {
			Asset *struct {
				Status string `json:"status"`
				SHA256 string `json:"sha256"`
			} `json:"asset"`
		}
		if json.Unmarshal(e.Data, &a) == nil && a.Asset != nil && a.Asset.Status == "uploaded" && sha256Hex.MatchString(a.Asset.SHA256) {
			r.AssetSHA256 = a.Asset.SHA256
		}
	}
	return r, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// syncCollection brings one collection of a restaurant up to date:
// resumes a walk under way, or walks from the kept changes cursor, or
// walks it whole. Each page is applied in one target transaction together
// with the cursor that follows it.
func (s *Syncer) syncCollection(ctx context.Context, restaurant, coll string) (records, pages int64, err error) {
	if err := s.t.ensureCollectionTable(ctx, coll); err != nil {
		return 0, 0, err
	}
	st, err := s.t.State(ctx, restaurant, coll)
	if err != nil {
		return 0, 0, err
	}
	path := "/v1/restaurants/" + url.PathEscape(restaurant) + "/collections/" + url.PathEscape(coll) + "/records"
	refused := 0 // cursors refused this run: one fallback, not a loop
	withFiles := slices.Contains(fileCollections, coll)
	for {
		kind, cursor := walkFrom(st)
		var page walkPage
		err := s.get(ctx, path, pageQuery(cursor, PageSize), &page)
		if err != nil {
			if cursor != "" && IsStatus(err, 400) && refused < maxRefusals {
				refused++
				st = s.cursorRefused(restaurant, coll, st, cursor, err)
				continue
			}
			return records, pages, s.fatalIfUnauthorized(err)
		}
		recs, err := recordsOf(page.Data, withFiles)
		if err != nil {
			return records, pages, err
		}
		if st, err = s.applyWalkPage(ctx, restaurant, coll, kind, st, page, recs); err != nil {
			return records, pages, err
		}
		records += int64(len(recs))
		pages++
		s.progress(StreamEvent{Restaurant: restaurant, Stream: coll, Kind: kind, Pages: pages, Records: records, Done: page.NextCursor == nil})
		if page.NextCursor == nil {
			return records, pages, nil
		}
	}
}

// walkFrom is where a collection's walk goes on: the walk under way, or
// an incremental walk from the kept changes cursor, or a full walk (a
// rebuild keeps its kind).
func walkFrom(st StreamState) (kind, cursor string) {
	kind, cursor = st.WalkKind, st.WalkCursor
	switch {
	case cursor != "":
	case st.ChangesCursor != "":
		kind, cursor = "changes", st.ChangesCursor
	case kind != "rebuild":
		kind = "full"
	}
	return kind, cursor
}

// pageQuery is a list request's query: the limit, and the cursor if any.
func pageQuery(cursor string, limit int) url.Values {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// recordsOf checks a page's envelopes and turns them into stored records.
func recordsOf(page []envelope, withFiles bool) ([]Record, error) {
	recs := make([]Record, 0, len(page))
	for _, e := range page {
		r, err := e.record(withFiles)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// applyWalkPage applies a walk's page and the state that follows it in
// one target transaction: the next walk cursor, or at the walk's end its
// changes cursor (and, ending a rebuild, the rows it did not see
// dropped). It returns the stream's new state.
func (s *Syncer) applyWalkPage(ctx context.Context, restaurant, coll, kind string, st StreamState, page walkPage, recs []Record) (StreamState, error) {
	if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
		return st, fmt.Errorf("the last page of the walk carries no changesCursor")
	}
	next := st
	next.Pages++
	next.Applied += int64(len(recs))
	next.LastError = ""
	var dropped int64
	err := s.t.tx(ctx, func(tx *sql.Tx) error {
		if err := s.t.applyRecords(ctx, tx, restaurant, coll, recs, s.o.Tombstones, next.WalkGen, kind == "rebuild"); err != nil {
			return err
		}
		if page.NextCursor != nil {
			next.WalkCursor, next.WalkKind = *page.NextCursor, kind
			return s.t.putState(ctx, tx, restaurant, coll, next)
		}
		if kind == "rebuild" {
			n, err := s.t.dropStale(ctx, tx, restaurant, coll, next.WalkGen)
			if err != nil {
				return err
			}
			dropped = n
		}
		next.ChangesCursor, next.WalkCursor, next.WalkKind = *page.ChangesCursor, "", ""
		now := nowMillis()
		next.LastSyncedAt = &now
		return s.t.putState(ctx, tx, restaurant, coll, next)
	})
	if err != nil {
		return st, fmt.Errorf("applying a page to %s: %w", s.t.Where, err)
	}
	if dropped > 0 {
		s.log.Warn("rebuild dropped records the server no longer has", "restaurant", restaurant, "stream", coll, "dropped", dropped)
	}
	return next, nil
}

// progress tells the display about a stream's page, with the budget the
// last answer left.
func (s *Syncer) progress(ev StreamEvent) {
	ev.BudgetRemaining, ev.BudgetLimit = s.c.Budget()
	s.prog.Stream(ev)
}

// maxRefusals is how many refused cursors a stream survives in one run:
// an expired walk cursor, then a refused changes cursor. A server that
// keeps refusing the cursors it issues (replicas with different cursor
// keys, a proxy altering them) fails the stream instead of looping.
const maxRefusals = 2

// cursorRefused decides what to walk after the server refused a stored
// cursor with 400: an expired walk cursor falls back to the changes cursor
// the walk started from; a refused changes cursor (or a first walk's
// expired cursor) to a rebuild: a full walk that replaces the copy.
func (s *Syncer) cursorRefused(restaurant, coll string, st StreamState, cursor string, err error) StreamState {
	if cursor == st.WalkCursor && st.ChangesCursor != "" {
		s.log.Warn("walk cursor refused (expired?); walking again from the kept changes cursor", "restaurant", restaurant, "stream", coll, "error", err.Error())
		st.WalkCursor, st.WalkKind = "", ""
		return st
	}
	s.log.Warn("cursor refused; rebuilding the stream with a full walk", "restaurant", restaurant, "stream", coll, "error", err.Error())
	st.WalkCursor, st.ChangesCursor, st.WalkKind = "", "", "rebuild"
	st.WalkGen++
	return st
}

// fatalIfUnauthorized makes a 401 end the run: the key no longer works.
func (s *Syncer) fatalIfUnauthorized(err error) error {
	if IsStatus(err, 401) {
		return errFatal{err}
	}
	return err
}

// delivery is a delivery as the API sends it (spec 2.2), kept whole.
type delivery struct {
	ID          string `json:"id"`
	OccurredAt  string `json:"occurredAt"`
	IsCompliant bool   `json:"isCompliant"`
	Supplier    struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"supplier"`
	ImageCount int64 `json:"imageCount"`
}

type deliveryPage struct {
	Data          []json.RawMessage `json:"data"`
	NextCursor    *string           `json:"nextCursor"`
	ChangesCursor *string           `json:"changesCursor"`
}

// syncDeliveries brings a restaurant's deliveries up to date through the
// receive-order changes cursor (GET .../delivery-changes): from the kept
// changesCursor, or from the first delivery received on the first sync,
// each page applied in one target transaction with the cursor that
// follows it. A delivery uploaded days after it occurred comes after
// everything received before it, so it is never missed (the occurredAt
// window with an overlap would miss any upload later than the overlap).
// Deliveries that occurred before DeliveriesSince are not stored.
func (s *Syncer) syncDeliveries(ctx context.Context, restaurant string) (inserted, pages int64, err error) {
	const stream = "deliveries"
	st, err := s.t.State(ctx, restaurant, stream)
	if err != nil {
		return 0, 0, err
	}
	path := "/v1/restaurants/" + url.PathEscape(restaurant) + "/delivery-changes"
	refused := 0
	for {
		cursor := st.WalkCursor
		if cursor == "" {
			cursor = st.ChangesCursor
		}
		var page deliveryPage
		err := s.get(ctx, path, pageQuery(cursor, PageSize), &page)
		if err != nil {
			if cursor != "" && IsStatus(err, 400) && refused < maxRefusals {
				// Deliveries are immutable and stored by id: reading them
				// all again from the first one received loses nothing.
				refused++
				s.log.Warn("delivery cursor refused; reading the deliveries again from the first received", "restaurant", restaurant, "error", err.Error())
				st.WalkCursor, st.ChangesCursor = "", ""
				continue
			}
			return inserted, pages, s.fatalIfUnauthorized(err)
		}
		if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
			return inserted, pages, fmt.Errorf("the last page of the deliveries carries no changesCursor")
		}
		ds, err := s.deliveriesOf(page.Data)
		if err != nil {
			return inserted, pages, err
		}
		var n int64
		if st, n, err = s.applyDeliveryPage(ctx, restaurant, st, page, ds); err != nil {
			return inserted, pages, err
		}
		inserted += n
		pages++
		s.progress(StreamEvent{Restaurant: restaurant, Stream: stream, Kind: "changes", Pages: pages, Records: inserted, Done: page.NextCursor == nil})
		if page.NextCursor == nil {
			return inserted, pages, nil
		}
	}
}

// deliveriesOf checks a page's deliveries and keeps those that occurred
// since DeliveriesSince.
func (s *Syncer) deliveriesOf(page []json.RawMessage) ([]Delivery, error) {
	ds := make([]Delivery, 0, len(page))
	for _, raw := range page {
		var d delivery
		if err := json.Unmarshal(raw, &d); err != nil || d.ID == "" {
			return nil, fmt.Errorf("a delivery that is not the documented shape: %v", err)
		}
		at, err := strconv.ParseInt(d.OccurredAt, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("delivery %q: malformed occurredAt", d.ID)
		}
		if at < s.o.DeliveriesSince {
			continue
		}
		ds = append(ds, Delivery{ID: d.ID, OccurredAt: at, IsCompliant: d.IsCompliant, SupplierID: d.Supplier.ID,
			SupplierName: d.Supplier.Name, ImageCount: d.ImageCount, Data: raw})
	}
	return ds, nil
}

// applyDeliveryPage applies a page of deliveries and the state that
// follows it in one target transaction; it returns the new state and how
// many deliveries were new.
func (s *Syncer) applyDeliveryPage(ctx context.Context, restaurant string, st StreamState, page deliveryPage, ds []Delivery) (StreamState, int64, error) {
	next := st
	next.Pages++
	next.LastError = ""
	// The occurredAt windows of earlier versions are over.
	next.WindowFrom, next.WindowTo, next.PassTo = nil, nil, nil
	var n int64
	err := s.t.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if n, err = s.t.applyDeliveries(ctx, tx, restaurant, ds); err != nil {
			return err
		}
		next.Applied += n
		if page.NextCursor != nil {
			next.WalkCursor = *page.NextCursor
		} else {
			now := nowMillis()
			next.ChangesCursor, next.WalkCursor, next.LastSyncedAt = *page.ChangesCursor, "", &now
		}
		return s.t.putState(ctx, tx, restaurant, "deliveries", next)
	})
	if err != nil {
		return st, 0, fmt.Errorf("applying a page to %s: %w", s.t.Where, err)
	}
	return next, n, nil
}
