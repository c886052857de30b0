package mirror

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// FeedPageSize is the limit of the key-wide feed's requests
// (GET /v1/records): the largest it takes. The feed's cursors take any
// limit, and the server also ends a page at about 1 MiB of items.
const FeedPageSize = 500

// A first sync reads everything the key reads through the key-wide feed,
// GET /v1/records: the items of every stream that holds data, stream
// after stream, so it costs a request per FeedPageSize items instead of a
// walk (and a request) per stream. Each page is applied in one target
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

// feedItem is an item of GET /v1/records.
type feedItem struct {
	RestaurantID string          `json:"restaurantId"`
	Stream       string          `json:"stream"`
	Record       *envelope       `json:"record"`
	Delivery     json.RawMessage `json:"delivery"`
}

// feedStream is a stream the feed ended, with the cursor and head a walk
// of it would have ended at.
type feedStream struct {
	RestaurantID  string `json:"restaurantId"`
	Stream        string `json:"stream"`
	Head          string `json:"head"`
	ChangesCursor string `json:"changesCursor"`
}

type feedPage struct {
	Data          []feedItem   `json:"data"`
	Streams       []feedStream `json:"streams"`
	NextCursor    *string      `json:"nextCursor"`
	ChangesCursor *string      `json:"changesCursor"`
}

// feedKind marks, in sync_state.walk_kind, a stream the feed under way
// has begun and not yet ended; feedNewKind one that held nothing here
// when the feed began it.
const (
	feedKind    = "feed"
	feedNewKind = "feed-new"
)

// feedApplies reports whether this run's scope is what the feed reads:
// every stream of the key. A run narrowed to some restaurants or
// collections walks its streams one by one instead of reading the rest.
func (s *Syncer) feedApplies() bool {
	return len(s.o.Restaurants) == 0 && len(s.o.Collections) == 0
}

// firstListing reads the feed when the mirror has no position to list
// changes from (a first sync), when a feed is under way (an earlier run
// stopped inside it), or, with rebuild, when the kept position was
// refused. It reports whether the feed ran to its end; a server without
// the feed (404) leaves the work to the walks of every stream.
func (s *Syncer) firstListing(ctx context.Context, r *pass, rebuild bool) (bool, error) {
	if !s.feedApplies() {
		return false, nil
	}
	cursor, err := s.t.feedCursor(ctx)
	if err != nil {
		return false, err
	}
	position, err := s.t.changesPosition(ctx, s.scope())
	if err != nil {
		return false, err
	}
	if cursor == "" && position != "" && !rebuild {
		return false, nil
	}
	return s.readFeed(ctx, r, cursor)
}

// readFeed reads the feed from cursor ("" from its beginning) to its
// last page. A cursor the server refuses (expired, or the key's grants
// changed) starts the feed over once.
func (s *Syncer) readFeed(ctx context.Context, r *pass, cursor string) (bool, error) {
	restarted := false
	if cursor == "" {
		if err := s.t.restartFeed(ctx); err != nil {
			return false, err
		}
	} else {
		s.log.Info("resuming the first listing of every record after its last applied page")
	}
	for {
		var page feedPage
		err := s.get(ctx, "/v1/records", pageQuery(cursor, FeedPageSize), &page)
		switch {
		case err == nil:
		case cursor == "" && IsStatus(err, 404):
			s.log.Warn("the server has no key-wide feed (GET /v1/records); walking every stream instead")
			return false, nil
		case cursor != "" && IsStatus(err, 400) && !restarted:
			s.log.Warn("the first listing's cursor was refused (expired, or the key's grants changed); starting it over from the beginning", "error", err.Error())
			if err := s.t.restartFeed(ctx); err != nil {
				return false, err
			}
			cursor, restarted = "", true
			continue
		default:
			return false, err
		}
		if err := s.applyFeedPage(ctx, r, page); err != nil {
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
	key   streamKey
	items []feedItem
}

// runsOf cuts a page's items into runs of one stream, skipping the
// streams this mirror cannot hold (a collection whose name cannot be a
// table here).
func (s *Syncer) runsOf(items []feedItem) []feedRun {
	var runs []feedRun
	for _, it := range items {
		k := streamKey{it.RestaurantID, it.Stream}
		if !s.feedHolds(k) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].key == k {
			runs[n-1].items = append(runs[n-1].items, it)
			continue
		}
		runs = append(runs, feedRun{key: k, items: []feedItem{it}})
	}
	return runs
}

// feedHolds reports whether the mirror keeps stream k of the feed.
func (s *Syncer) feedHolds(k streamKey) bool {
	return k.restaurant != "" && (k.stream == "deliveries" || tableAllowed(k.stream))
}

// feedApply is what one feed page changes in the target, checked and
// decoded before its transaction begins.
type feedApply struct {
	runs   []feedRun
	recs   [][]Record   // per run of a collection
	ds     [][]Delivery // per run of deliveries
	ended  []feedStream
	heads  []int64                    // per ended stream
	states map[streamKey]*StreamState // every stream the page touches, as it will be
}

// applyFeedPage applies one page: every stream it touches is made sure
// of (tables, state) first; then, in one transaction, its items, the
// streams it ends and the feed's position.
func (s *Syncer) applyFeedPage(ctx context.Context, r *pass, page feedPage) error {
	if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
		return fmt.Errorf("the last page of GET /v1/records carries no changesCursor")
	}
	a, err := s.prepareFeedPage(ctx, page)
	if err != nil {
		return err
	}
	inserted := map[streamKey]int64{}
	err = s.t.tx(ctx, func(tx *sql.Tx) error {
		for i, run := range a.runs {
			n, err := s.applyFeedRun(ctx, tx, run, a.recs[i], a.ds[i], a.states[run.key])
			if err != nil {
				return err
			}
			inserted[run.key] += n
		}
		ended := map[streamKey]bool{}
		for i, e := range a.ended {
			k := streamKey{e.RestaurantID, e.Stream}
			ended[k] = true
			if err := s.endFeedStream(ctx, tx, e, a.heads[i], a.states[k]); err != nil {
				return err
			}
		}
		for k, st := range a.states {
			if ended[k] {
				continue
			}
			if err := s.t.putState(ctx, tx, k.restaurant, k.stream, *st); err != nil {
				return err
			}
		}
		return s.putFeedPosition(ctx, tx, page)
	})
	if err != nil {
		return fmt.Errorf("applying a page of GET /v1/records to %s: %w", s.t.Where, err)
	}
	s.feedProgress(r, a, inserted, page.NextCursor == nil)
	return nil
}

// prepareFeedPage decodes a page's items, makes sure of the tables of
// its collections (each in its own transaction, before the page's), and
// reads the state of every stream it touches, begun as the feed's.
func (s *Syncer) prepareFeedPage(ctx context.Context, page feedPage) (*feedApply, error) {
	a := &feedApply{runs: s.runsOf(page.Data), states: map[streamKey]*StreamState{}}
	for _, run := range a.runs {
		recs, ds, err := s.decodeRun(run)
		if err != nil {
			return nil, err
		}
		a.recs, a.ds = append(a.recs, recs), append(a.ds, ds)
		if err := s.beginFeedStream(ctx, a, run.key); err != nil {
			return nil, err
		}
	}
	for _, e := range page.Streams {
		k := streamKey{e.RestaurantID, e.Stream}
		if !s.feedHolds(k) {
			continue
		}
		head, err := position(e.Head)
		if err != nil || e.ChangesCursor == "" {
			return nil, fmt.Errorf("GET /v1/records: stream %s of %s ends with a malformed head %q or no changesCursor", e.Stream, e.RestaurantID, e.Head)
		}
		if err := s.beginFeedStream(ctx, a, k); err != nil {
			return nil, err
		}
		a.ended, a.heads = append(a.ended, e), append(a.heads, head)
	}
	return a, nil
}

// decodeRun checks a run's items: records of a collection, or deliveries
// (those that occurred before DeliveriesSince left out).
func (s *Syncer) decodeRun(run feedRun) ([]Record, []Delivery, error) {
	if run.key.stream == "deliveries" {
		raws := make([]json.RawMessage, len(run.items))
		for i, it := range run.items {
			if len(it.Delivery) == 0 {
				return nil, nil, fmt.Errorf("GET /v1/records: an item of the deliveries of %s without a delivery", run.key.restaurant)
			}
			raws[i] = it.Delivery
		}
		ds, err := s.deliveriesOf(raws)
		return nil, ds, err
	}
	envs := make([]envelope, len(run.items))
	for i, it := range run.items {
		if it.Record == nil {
			return nil, nil, fmt.Errorf("GET /v1/records: an item of %s of %s without a record", run.key.stream, run.key.restaurant)
		}
		envs[i] = *it.Record
	}
	recs, err := recordsOf(envs, slices.Contains(fileCollections, run.key.stream))
	return recs, nil, err
}

// beginFeedStream reads a stream's state into a.states once per page and,
// if the feed under way has not begun it yet, begins it: a new walk
// generation for its rows, and any walk of it under way superseded. A
// collection's table is made sure of first.
func (s *Syncer) beginFeedStream(ctx context.Context, a *feedApply, k streamKey) error {
	if _, ok := a.states[k]; ok {
		return nil
	}
	if k.stream != "deliveries" {
		if err := s.t.ensureCollectionTable(ctx, k.stream); err != nil {
			return err
		}
	}
	st, err := s.t.State(ctx, k.restaurant, k.stream)
	if err != nil {
		return err
	}
	if st.WalkKind != feedKind && st.WalkKind != feedNewKind {
		// A stream that holds nothing here has nothing to drop when it ends.
		kind := feedNewKind
		if st.ChangesCursor != "" || st.WalkCursor != "" || st.Applied > 0 {
			kind = feedKind
		}
		st.WalkGen++
		st.WalkKind, st.WalkCursor = kind, ""
	}
	a.states[k] = &st
	return nil
}

// applyFeedRun writes a run of one stream's items inside tx and returns
// how many it wrote (deliveries: how many were new); the stream's state
// is written once for the page, by applyFeedPage.
func (s *Syncer) applyFeedRun(ctx context.Context, tx *sql.Tx, run feedRun, recs []Record, ds []Delivery, st *StreamState) (int64, error) {
	st.Pages++
	st.LastError = ""
	if run.key.stream == "deliveries" {
		n, err := s.t.applyDeliveries(ctx, tx, run.key.restaurant, ds)
		st.Applied += n
		st.WindowFrom, st.WindowTo, st.PassTo = nil, nil, nil
		return n, err
	}
	// As a rebuild: the feed's answer replaces the copy, every row
	// carrying the stream's new generation.
	if err := s.t.applyRecords(ctx, tx, run.key.restaurant, run.key.stream, recs, s.o.Tombstones, st.WalkGen, true); err != nil {
		return 0, err
	}
	st.Applied += int64(len(recs))
	return int64(len(recs)), nil
}

// endFeedStream ends a stream the feed finished, inside tx: its rows the
// feed did not bring are dropped (a collection), and it keeps the changes
// cursor and head a walk would have ended at, so later runs walk it from
// there.
func (s *Syncer) endFeedStream(ctx context.Context, tx *sql.Tx, e feedStream, head int64, st *StreamState) error {
	if e.Stream != "deliveries" && st.WalkKind == feedKind {
		dropped, err := s.t.dropStale(ctx, tx, e.RestaurantID, e.Stream, st.WalkGen)
		if err != nil {
			return err
		}
		if dropped > 0 {
			s.log.Warn("the first listing dropped records the server no longer has", "restaurant", e.RestaurantID, "stream", e.Stream, "dropped", dropped)
		}
	}
	now := nowMillis()
	st.ChangesCursor, st.WalkCursor, st.WalkKind, st.LastSyncedAt, st.LastError = e.ChangesCursor, "", "", &now, ""
	if err := s.t.putState(ctx, tx, e.RestaurantID, e.Stream, *st); err != nil {
		return err
	}
	return s.t.putHead(ctx, tx, e.RestaurantID, e.Stream, head)
}

// putFeedPosition keeps, with the page, where the feed goes on: its next
// cursor, or after its last page no feed under way and the changes
// position it ends at.
func (s *Syncer) putFeedPosition(ctx context.Context, tx *sql.Tx, page feedPage) error {
	if page.NextCursor != nil {
		return s.t.putFeedCursor(ctx, tx, *page.NextCursor)
	}
	if err := s.t.putFeedCursor(ctx, tx, ""); err != nil {
		return err
	}
	return s.t.putChangesPositionTx(ctx, tx, s.scope(), *page.ChangesCursor)
}

// feedProgress counts an applied page in the run's summary and tells the
// progress display about the feed as one line (a line per stream would
// be a redraw per stream, and the feed ends hundreds a page).
func (s *Syncer) feedProgress(r *pass, a *feedApply, inserted map[streamKey]int64, last bool) {
	r.sum.Pages++
	for _, run := range a.runs {
		if run.key.stream == "deliveries" {
			r.sum.Deliveries += inserted[run.key]
		} else {
			r.sum.Records += inserted[run.key]
		}
	}
	r.sum.Streams += len(a.ended)
	s.progress(StreamEvent{Stream: feedStreamName, Kind: feedKind, Pages: r.sum.Pages, Records: r.sum.Records + r.sum.Deliveries, Done: last})
}

// feedStreamName names the feed in progress events.
const feedStreamName = "GET /v1/records"

// errPositionRefused: the server refused the kept GET /v1/changes
// position (its data was restored, or its cursor key changed).
var errPositionRefused = errors.New("the kept changes position was refused")
