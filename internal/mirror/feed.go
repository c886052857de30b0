package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// FeedPageSize is the limit of the key-wide feed's requests
// (GET /v1/records): the largest it takes. The feed's cursors take any
// limit, and the server also ends a page at about 1 MiB of items.
const FeedPageSize = 500

// feedReader reads the key-wide feed, GET /v1/records, through which a
// first sync reads everything the key reads: the items of every stream
// that holds data, stream after stream, so it costs a request per
// FeedPageSize items instead of a walk (and a request) per stream. Each page is applied in one target
// transaction with everything that follows from it: its records and
// deliveries, the state of every stream the page ends (the cursor a walk
// of it would have given, and its head), and the feed's next cursor, so
// a run interrupted anywhere resumes after the last applied page. The
// last page's changes cursor, a GET /v1/changes position from the feed's
// start, becomes the mirror's position: the listing that follows reports
// every stream written while the feed ran, and those are walked from the
// cursors the feed kept.
//
// A stream the feed brings is applied as a rebuild: its rows carry a new
// walk generation and, when the feed ends the stream, the rows it did not
// bring are dropped. On a first sync there are none; when the feed
// replaces a kept position the server refused (its data was restored),
// the copy becomes exactly the server's.
type feedReader struct{ *session }

// firstListing reads the feed when the mirror has no position to list
// changes from (a first sync), when a feed is under way (an earlier run
// stopped inside it), or, with rebuild, when the kept position was
// refused. It reports whether the feed ran to its end; a server without
// the feed (404) leaves the work to the walks of every stream.
func (s feedReader) firstListing(ctx context.Context, r *pass, rebuild bool) (bool, error) {
	if !s.o.feedApplies() {
		return false, nil
	}
	cursor, err := s.t.Streams.FeedCursor(ctx)
	if err != nil {
		return false, err
	}
	position, err := s.t.Streams.ChangesPosition(ctx, s.o.scope())
	if err != nil {
		return false, err
	}
	if cursor == "" && position != "" && !rebuild || strings.HasPrefix(cursor, catchUpMark) {
		return false, nil // nothing to read, or a catch-up under way (catchUpReader)
	}
	return s.read(ctx, r, cursor)
}

// read reads the feed from cursor ("" from its beginning) to its
// last page. A cursor the server refuses (expired, or the key's grants
// changed) starts the feed over once.
func (s feedReader) read(ctx context.Context, r *pass, cursor string) (bool, error) {
	restarted := false
	if cursor == "" {
		if err := s.t.Streams.RestartFeed(ctx); err != nil {
			return false, err
		}
	} else {
		s.log.Info("resuming the first listing of every record after its last applied page")
	}
	for {
		var page partnerapi.FeedPage
		err := s.get(ctx, "/v1/records", pageQuery(cursor, FeedPageSize), &page)
		switch {
		case err == nil:
		case cursor == "" && partnerapi.IsStatus(err, 404):
			s.log.Warn("the server has no key-wide feed (GET /v1/records); walking every stream instead")
			return false, nil
		case cursor != "" && partnerapi.IsStatus(err, 400) && !restarted:
			s.log.Warn("the first listing's cursor was refused (expired, or the key's grants changed); starting it over from the beginning", "error", err.Error())
			if err := s.t.Streams.RestartFeed(ctx); err != nil {
				return false, err
			}
			cursor, restarted = "", true
			continue
		default:
			return false, err
		}
		if err := s.applyPage(ctx, r, page, false); err != nil {
			return false, err
		}
		if page.NextCursor == nil {
			return true, nil
		}
		cursor = *page.NextCursor
	}
}

// feedRun is a run of consecutive items of one stream on a feed page.
type feedRun struct {
	key   targets.StreamKey
	items []partnerapi.FeedItem
}

// runsOf cuts a page's items into runs of one stream, skipping the
// streams this mirror cannot hold (a collection whose name cannot be a
// table here).
func runsOf(items []partnerapi.FeedItem) []feedRun {
	var runs []feedRun
	for _, it := range items {
		k := targets.StreamKey{Restaurant: it.RestaurantID, Stream: it.Stream}
		if !feedHolds(k) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].key == k {
			runs[n-1].items = append(runs[n-1].items, it)
			continue
		}
		runs = append(runs, feedRun{key: k, items: []partnerapi.FeedItem{it}})
	}
	return runs
}

// feedHolds reports whether the mirror keeps stream k of the feed.
func feedHolds(k targets.StreamKey) bool {
	return k.Restaurant != "" && (k.Stream == "deliveries" || targets.TableAllowed(k.Stream))
}

// feedApply is what one feed page changes in the target, checked and
// decoded before its transaction begins.
type feedApply struct {
	runs   []feedRun
	recs   [][]targets.Record   // per run of a collection
	ds     [][]targets.Delivery // per run of deliveries
	ended  []partnerapi.FeedStream
	heads  []int64                                    // per ended stream
	states map[targets.StreamKey]*targets.StreamState // every stream the page touches, as it will be (load)
	keys   []targets.StreamKey                        // the same, in the page's order
	// changes: a page of a feed of what changed (catchUpReader): its
	// items are applied as a changes walk's, each stream ended keeps its
	// rows, and the feed's cursor is kept marked as a catch-up's.
	changes bool
}

// applyPage applies one page: every stream it touches is made sure
// of (tables, state) first; then, in one transaction, its items, the
// streams it ends and the feed's position. changes: a page of a feed of
// what changed.
func (s feedReader) applyPage(ctx context.Context, r *pass, page partnerapi.FeedPage, changes bool) error {
	if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
		return fmt.Errorf("the last page of GET /v1/records carries no changesCursor")
	}
	a, err := s.prepare(ctx, page, changes)
	if err != nil {
		return err
	}
	inserted := map[targets.StreamKey]int64{}
	err = s.t.Update(ctx, func(p *targets.Page) error {
		if err := s.load(ctx, p, a); err != nil {
			return err
		}
		if err := s.applyRuns(ctx, p, a, inserted); err != nil {
			return err
		}
		heads := make(map[targets.StreamKey]int64, len(a.ended))
		for i, e := range a.ended {
			k := targets.StreamKey{Restaurant: e.RestaurantID, Stream: e.Stream}
			heads[k] = a.heads[i]
			if err := s.end(ctx, p, e, a.states[k], a.changes); err != nil {
				return err
			}
		}
		states := make(map[targets.StreamKey]targets.StreamState, len(a.states))
		for k, st := range a.states {
			states[k] = *st
		}
		if err := p.PutStates(ctx, states); err != nil {
			return err
		}
		if err := p.PutHeads(ctx, heads); err != nil {
			return err
		}
		return s.putPosition(ctx, p, page, changes)
	})
	if err != nil {
		return fmt.Errorf("applying a page of GET /v1/records to %s: %w", s.t.Where, err)
	}
	s.progressed(r, a, inserted, page.NextCursor == nil)
	return nil
}

// prepare decodes a page's items, makes sure of the tables of
// its collections (each in its own transaction, before the page's), and
// reads the state of every stream it touches, begun as the feed's.
func (s feedReader) prepare(ctx context.Context, page partnerapi.FeedPage, changes bool) (*feedApply, error) {
	a := &feedApply{runs: runsOf(page.Data), states: map[targets.StreamKey]*targets.StreamState{}, changes: changes}
	for _, run := range a.runs {
		recs, ds, err := s.decodeRun(run)
		if err != nil {
			return nil, err
		}
		a.recs, a.ds = append(a.recs, recs), append(a.ds, ds)
		if err := s.begin(ctx, a, run.key); err != nil {
			return nil, err
		}
	}
	for _, e := range page.Streams {
		k := targets.StreamKey{Restaurant: e.RestaurantID, Stream: e.Stream}
		if !feedHolds(k) {
			continue
		}
		head, err := position(e.Head)
		if err != nil || e.ChangesCursor == "" {
			return nil, fmt.Errorf("GET /v1/records: stream %s of %s ends with a malformed head %q or no changesCursor", e.Stream, e.RestaurantID, e.Head)
		}
		if err := s.begin(ctx, a, k); err != nil {
			return nil, err
		}
		a.ended, a.heads = append(a.ended, e), append(a.heads, head)
	}
	return a, nil
}

// decodeRun checks a run's items: records of a collection, or deliveries
// (those that occurred before DeliveriesSince left out).
func (s feedReader) decodeRun(run feedRun) ([]targets.Record, []targets.Delivery, error) {
	if run.key.Stream == "deliveries" {
		raws := make([]json.RawMessage, len(run.items))
		for i, it := range run.items {
			if len(it.Delivery) == 0 {
				return nil, nil, fmt.Errorf("GET /v1/records: an item of the deliveries of %s without a delivery", run.key.Restaurant)
			}
			raws[i] = it.Delivery
		}
		ds, err := deliveriesOf(raws, s.o.DeliveriesSince)
		return nil, ds, err
	}
	envs := make([]partnerapi.Envelope, len(run.items))
	for i, it := range run.items {
		if it.Record == nil {
			return nil, nil, fmt.Errorf("GET /v1/records: an item of %s of %s without a record", run.key.Stream, run.key.Restaurant)
		}
		envs[i] = *it.Record
	}
	recs, err := recordsOf(envs, slices.Contains(fileCollections, run.key.Stream))
	return recs, nil, err
}

// begin notes a stream the page touches, once, making sure of a
// collection's table first (in its own transaction, before the page's).
func (s feedReader) begin(ctx context.Context, a *feedApply, k targets.StreamKey) error {
	if _, ok := a.states[k]; ok {
		return nil
	}
	if k.Stream != "deliveries" {
		if err := s.t.EnsureCollection(ctx, k.Stream); err != nil {
			return err
		}
	}
	a.states[k] = nil
	a.keys = append(a.keys, k)
	return nil
}

// load reads, with the page and in one statement, the state of every
// stream it touches into a.states and, for a stream the feed under way
// has not begun yet, begins it: a new walk generation for its rows, and
// any walk of it under way superseded (a feed of what changed begins
// nothing: its items are a changes walk's).
func (s feedReader) load(ctx context.Context, p *targets.Page, a *feedApply) error {
	held, err := p.States(ctx, a.keys)
	if err != nil {
		return err
	}
	for _, k := range a.keys {
		st := held[k]
		if !a.changes && st.WalkKind != targets.FeedKind && st.WalkKind != targets.FeedNewKind {
			// A stream that holds nothing here has nothing to drop when it ends.
			kind := targets.FeedNewKind
			if st.ChangesCursor != "" || st.WalkCursor != "" || st.Applied > 0 {
				kind = targets.FeedKind
			}
			st.WalkGen++
			st.WalkKind, st.WalkCursor = kind, ""
		}
		a.states[k] = &st
	}
	return nil
}

// applyRuns writes a page's runs with the page, a collection at a time
// (every stream of it in the same statements) and the deliveries of
// every restaurant at once, so the page costs the target statements by
// its collections, not its streams; inserted gets how many items each
// stream wrote (deliveries: how many were new). Each stream's state is
// written once for the page, by applyPage.
func (s feedReader) applyRuns(ctx context.Context, p *targets.Page, a *feedApply, inserted map[targets.StreamKey]int64) error {
	byCollection := map[string][]targets.StreamRecords{}
	var collections []string
	var ds []targets.StreamDeliveries
	for i, run := range a.runs {
		st := a.states[run.key]
		st.Pages++
		st.LastError = ""
		if run.key.Stream == "deliveries" {
			ds = append(ds, targets.StreamDeliveries{Restaurant: run.key.Restaurant, Deliveries: a.ds[i]})
			st.WindowFrom, st.WindowTo, st.PassTo = nil, nil, nil
			continue
		}
		if _, ok := byCollection[run.key.Stream]; !ok {
			collections = append(collections, run.key.Stream)
		}
		// As a rebuild: the feed's answer replaces the copy, every row
		// carrying the stream's new generation. (A feed of what changed
		// applies its records as a changes walk: the newer sequence wins.)
		byCollection[run.key.Stream] = append(byCollection[run.key.Stream], targets.StreamRecords{Restaurant: run.key.Restaurant, Records: a.recs[i], Gen: st.WalkGen})
		st.Applied += int64(len(a.recs[i]))
		inserted[run.key] += int64(len(a.recs[i]))
	}
	for _, c := range collections {
		if err := p.ApplyCollection(ctx, c, byCollection[c], s.o.Tombstones, !a.changes); err != nil {
			return err
		}
	}
	if len(ds) == 0 {
		return nil
	}
	counts, err := p.ApplyDeliveriesOf(ctx, ds)
	for r, n := range counts {
		k := targets.StreamKey{Restaurant: r, Stream: "deliveries"}
		a.states[k].Applied += n
		inserted[k] += n
	}
	return err
}

// end ends a stream the feed finished, with the page: its rows the
// feed did not bring are dropped (a collection), and its state keeps the
// changes cursor a walk would have ended at, so later runs walk it from
// there (applyPage writes the states and the heads of the page's
// streams, a statement for all).
func (s feedReader) end(ctx context.Context, p *targets.Page, e partnerapi.FeedStream, st *targets.StreamState, changes bool) error {
	if changes {
		// A walk under way (a rebuild, an earlier run's) goes on from
		// where it stands; the stream's changes cursor is the feed's.
		now := time.Now().UnixMilli()
		st.ChangesCursor, st.LastSyncedAt, st.LastError = e.ChangesCursor, &now, ""
		return nil
	}
	if e.Stream != "deliveries" && st.WalkKind == targets.FeedKind {
		dropped, err := p.DropStale(ctx, e.RestaurantID, e.Stream, st.WalkGen)
		if err != nil {
			return err
		}
		if dropped > 0 {
			s.log.Warn("the first listing dropped records the server no longer has", "restaurant", e.RestaurantID, "stream", e.Stream, "dropped", dropped)
		}
	}
	now := time.Now().UnixMilli()
	st.ChangesCursor, st.WalkCursor, st.WalkKind, st.LastSyncedAt, st.LastError = e.ChangesCursor, "", "", &now, ""
	return nil
}

// putPosition keeps, with the page, where the feed goes on: its next
// cursor, or after its last page no feed under way and the changes
// position it ends at.
func (s feedReader) putPosition(ctx context.Context, p *targets.Page, page partnerapi.FeedPage, changes bool) error {
	if page.NextCursor != nil && changes {
		return p.PutFeedCursor(ctx, catchUpMark+*page.NextCursor)
	}
	if page.NextCursor != nil {
		return p.PutFeedCursor(ctx, *page.NextCursor)
	}
	if err := p.PutFeedCursor(ctx, ""); err != nil {
		return err
	}
	return p.PutChangesPosition(ctx, s.o.scope(), *page.ChangesCursor)
}

// progressed counts an applied page in the run's summary and tells the
// progress display about the feed as one line (a line per stream would
// be a redraw per stream, and the feed ends hundreds a page).
func (s feedReader) progressed(r *pass, a *feedApply, inserted map[targets.StreamKey]int64, last bool) {
	r.sum.Pages++
	for _, run := range a.runs {
		if run.key.Stream == "deliveries" {
			r.sum.Deliveries += inserted[run.key]
		} else {
			r.sum.Records += inserted[run.key]
		}
	}
	r.sum.Streams += len(a.ended)
	s.progress(StreamEvent{Stream: feedStreamName, Kind: targets.FeedKind, Pages: r.sum.Pages, Records: r.sum.Records + r.sum.Deliveries, Done: last})
}

// feedStreamName names the feed in progress events.
const feedStreamName = "GET /v1/records"
