package mirror

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// walker brings one stream up to date by itself: a collection through its
// walk (full, from its changes cursor, or a rebuild), the deliveries
// through their receive-order changes cursor. Each page is applied in one
// target transaction together with the cursor that follows it.
type walker struct{ *session }

// collection brings one collection of a restaurant up to date:
// resumes a walk under way, or walks from the kept changes cursor, or
// walks it whole. Each page is applied in one target transaction together
// with the cursor that follows it.
func (s walker) collection(ctx context.Context, restaurant, coll string) (records, pages int64, err error) {
	if err := s.t.EnsureCollection(ctx, coll); err != nil {
		return 0, 0, err
	}
	st, err := s.t.Streams.State(ctx, restaurant, coll)
	if err != nil {
		return 0, 0, err
	}
	path := "/v1/restaurants/" + url.PathEscape(restaurant) + "/collections/" + url.PathEscape(coll) + "/records"
	refused := 0 // cursors refused this run: one fallback, not a loop
	withFiles := slices.Contains(fileCollections, coll)
	for {
		kind, cursor := walkFrom(st)
		var page partnerapi.WalkPage
		err := s.get(ctx, path, pageQuery(cursor, PageSize), &page)
		if err != nil {
			if cursor != "" && partnerapi.IsStatus(err, 400) && refused < maxRefusals {
				refused++
				st = s.cursorRefused(restaurant, coll, st, cursor, err)
				continue
			}
			return records, pages, fatalIfUnauthorized(err)
		}
		recs, err := recordsOf(page.Data, withFiles)
		if err != nil {
			return records, pages, err
		}
		if st, err = s.applyPage(ctx, restaurant, coll, kind, st, page, recs); err != nil {
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
func walkFrom(st targets.StreamState) (kind, cursor string) {
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

// applyPage applies a walk's page and the state that follows it in
// one target transaction: the next walk cursor, or at the walk's end its
// changes cursor (and, ending a rebuild, the rows it did not see
// dropped). It returns the stream's new state.
func (s walker) applyPage(ctx context.Context, restaurant, coll, kind string, st targets.StreamState, page partnerapi.WalkPage, recs []targets.Record) (targets.StreamState, error) {
	if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
		return st, fmt.Errorf("the last page of the walk carries no changesCursor")
	}
	next := st
	next.Pages++
	next.Applied += int64(len(recs))
	next.LastError = ""
	var dropped int64
	err := s.t.Update(ctx, func(p *targets.Page) error {
		if err := p.ApplyRecords(ctx, restaurant, coll, recs, s.o.Tombstones, next.WalkGen, kind == "rebuild"); err != nil {
			return err
		}
		if page.NextCursor != nil {
			next.WalkCursor, next.WalkKind = *page.NextCursor, kind
			return p.PutState(ctx, restaurant, coll, next)
		}
		if kind == "rebuild" {
			n, err := p.DropStale(ctx, restaurant, coll, next.WalkGen)
			if err != nil {
				return err
			}
			dropped = n
		}
		next.ChangesCursor, next.WalkCursor, next.WalkKind = *page.ChangesCursor, "", ""
		now := time.Now().UnixMilli()
		next.LastSyncedAt = &now
		return p.PutState(ctx, restaurant, coll, next)
	})
	if err != nil {
		return st, fmt.Errorf("applying a page to %s: %w", s.t.Where, err)
	}
	if dropped > 0 {
		s.log.Warn("rebuild dropped records the server no longer has", "restaurant", restaurant, "stream", coll, "dropped", dropped)
	}
	return next, nil
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
func (s walker) cursorRefused(restaurant, coll string, st targets.StreamState, cursor string, err error) targets.StreamState {
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

// deliveries brings a restaurant's deliveries up to date through the
// receive-order changes cursor (GET .../delivery-changes): from the kept
// changesCursor, or from the first delivery received on the first sync,
// each page applied in one target transaction with the cursor that
// follows it. A delivery uploaded days after it occurred comes after
// everything received before it, so it is never missed (the occurredAt
// window with an overlap would miss any upload later than the overlap).
// Deliveries that occurred before DeliveriesSince are not stored.
func (s walker) deliveries(ctx context.Context, restaurant string) (inserted, pages int64, err error) {
	const stream = "deliveries"
	st, err := s.t.Streams.State(ctx, restaurant, stream)
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
		var page partnerapi.DeliveryPage
		err := s.get(ctx, path, pageQuery(cursor, PageSize), &page)
		if err != nil {
			if cursor != "" && partnerapi.IsStatus(err, 400) && refused < maxRefusals {
				// Deliveries are immutable and stored by id: reading them
				// all again from the first one received loses nothing.
				refused++
				s.log.Warn("delivery cursor refused; reading the deliveries again from the first received", "restaurant", restaurant, "error", err.Error())
				st.WalkCursor, st.ChangesCursor = "", ""
				continue
			}
			return inserted, pages, fatalIfUnauthorized(err)
		}
		if page.NextCursor == nil && (page.ChangesCursor == nil || *page.ChangesCursor == "") {
			return inserted, pages, fmt.Errorf("the last page of the deliveries carries no changesCursor")
		}
		ds, err := deliveriesOf(page.Data, s.o.DeliveriesSince)
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

// applyDeliveryPage applies a page of deliveries and the state that
// follows it in one target transaction; it returns the new state and how
// many deliveries were new.
func (s walker) applyDeliveryPage(ctx context.Context, restaurant string, st targets.StreamState, page partnerapi.DeliveryPage, ds []targets.Delivery) (targets.StreamState, int64, error) {
	next := st
	next.Pages++
	next.LastError = ""
	// The occurredAt windows of earlier versions are over.
	next.WindowFrom, next.WindowTo, next.PassTo = nil, nil, nil
	var n int64
	err := s.t.Update(ctx, func(p *targets.Page) error {
		var err error
		if n, err = p.ApplyDeliveries(ctx, restaurant, ds); err != nil {
			return err
		}
		next.Applied += n
		if page.NextCursor != nil {
			next.WalkCursor = *page.NextCursor
		} else {
			now := time.Now().UnixMilli()
			next.ChangesCursor, next.WalkCursor, next.LastSyncedAt = *page.ChangesCursor, "", &now
		}
		return p.PutState(ctx, restaurant, "deliveries", next)
	})
	if err != nil {
		return st, 0, fmt.Errorf("applying a page to %s: %w", s.t.Where, err)
	}
	return next, n, nil
}
