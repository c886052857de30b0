package store

import (
	"context"
	"math"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// The key-wide records feed (GET /v1/records): the items of every stream
// a key reads, stream after stream in the order GET /v1/changes lists
// them, so that a first sync costs requests in proportion to its records,
// not to its streams. Inside a stream a page is exactly what a walk
// returns (a collection's full snapshot walk, pinned at the stream's head
// when the feed reaches it; the deliveries in receive order, as
// GET .../delivery-changes without a cursor), read by the walk's and the
// delivery changes' own statements: the feed has no rules of its own
// about what a stream holds.

// FeedAt is where a feed stands: after the stream (RestaurantID, Stream)
// (the zero FeedAt: before the first), or inside it when In is set.
type FeedAt struct {
	RestaurantID, Stream string
	// In is the walk position inside the stream: a collection's pin and
	// the sequence of the last record returned; for the deliveries, After
	// is the receive position of the last delivery returned (Pinned 0).
	In *WalkPos
}

// RecordFeedParams selects one page of RecordFeed.
type RecordFeedParams struct {
	// Groups are the streams the key reads (auth.Principal.Streams).
	Groups []StreamGroup
	At     FeedAt
	// Since, when not the zero Snapshot, makes the feed one of what
	// changed (GET /v1/records?since=): the streams written by
	// transactions it could not see, each from its first row it could not
	// see (feedSince).
	Since Snapshot
	// Limit bounds the items; MaxBytes stops a page once its items'
	// estimated JSON passes it (a page holds at least one item).
	Limit, MaxBytes int
}

// FeedItem is an item of a feed page: a record of a collection stream
// (Record) or a delivery of the deliveries stream (Delivery).
type FeedItem struct {
	RestaurantID, Stream string
	Record               *wire.Envelope
	Delivery             *wire.Delivery
}

// FeedEnd is a stream whose last item a page returned (or that held
// none): Head is where a walk of it would end, the pin of a collection's
// walk or the receive position of the last delivery; the next walk of it
// starts there.
type FeedEnd struct {
	RestaurantID, Stream string
	Head                 int64
}

// FeedPage is one page of the feed.
type FeedPage struct {
	Items []FeedItem
	Ended []FeedEnd
	// Next continues the feed; nil on its last page.
	Next *FeedAt
}

// feedFirstRows bounds the rows the first read of a page fetches, before
// it knows how large the records are: a page of 500 records of 1 MiB
// would otherwise read 500 MiB to return one. Later reads of the page
// fetch what the rest of the byte budget holds at the largest size seen
// so far (rowBudget), and every read is cut at the bytes left of the page
// (FeedRead.MaxBytes: records larger than any seen so far end it there),
// so a page of large records reads about what it returns: the records of
// a page of 1 MiB, and at most one more. Two
// rows cost a page of small records one round trip to learn their size.
const feedFirstRows = 2

// feedMaxRounds bounds the rounds of reads a page sends once it holds an
// item. Over production-shaped data a page takes at most 6 rounds
// (TestRecordFeedPageCostsItsRows); data no test foresaw ends a page
// early rather than costing it more round trips.
const feedMaxRounds = 8

// feedItemOverhead estimates the JSON of an item beyond its variable
// text (member names, timestamps, sequence, booleans).
const feedItemOverhead = 240

// feedStream is a stream a page reads: from its start (in nil) or from a
// position inside it. head bounds the items it has left: its head when
// listed (a stream holds at most one record per position), the pin less
// the position inside a collection's walk, -1 when unknown.
type feedStream struct {
	restaurantID, stream string
	head                 int64
	in                   *WalkPos
	// listed: head is the listing's, for the whole stream (the page
	// learns from it how far heads overstate items).
	listed bool
	// read and rows: what rounds read of it and the page has not taken
	// yet, because a stream before it was left part-read; partRead: the
	// stream may hold more than rows.
	read     *pgrows.FeedRead
	rows     pgrows.FeedRows
	partRead bool
}

// feedFill is a page being filled.
type feedFill struct {
	p     RecordFeedParams
	page  FeedPage
	bytes int
	// largest is the size of the largest item taken.
	largest int
	// at is where the page stands: after its last ended stream, or inside
	// the stream it is reading.
	at FeedAt
	// ended is, by stream name, what the listed streams the page ended
	// held: how many items their heads promised at most (each head taken
	// up to the limit) and how many they had. Records updated many times
	// make heads overstate items, and how much is a collection's habit
	// (a restaurant's settings are edited often, deliveries never):
	// planning expects a stream to hold the share its name's held.
	ended map[string]feedYield
}

// feedYield is what listed streams of one name held against their heads.
type feedYield struct{ items, bound int }

func (f *feedFill) rem() int { return f.p.Limit - len(f.page.Items) }

func (f *feedFill) full() bool {
	return len(f.page.Items) >= f.p.Limit || (len(f.page.Items) > 0 && f.bytes >= f.p.MaxBytes)
}

// rowBudget is how many rows the next round may expect to take: what is
// left of the limit, and of the byte budget at the largest item size seen
// so far (records of one stream or one key are often of a size, so the
// byte budget is reached at about the row it is planned to be).
func (f *feedFill) rowBudget() int {
	if len(f.page.Items) == 0 {
		return min(f.rem(), feedFirstRows)
	}
	left := max(f.p.MaxBytes-f.bytes, 0)
	return max(1, min(f.rem(), (left+f.largest-1)/f.largest))
}

// add takes an item of size n into the page.
func (f *feedFill) add(it FeedItem, n int) {
	f.page.Items = append(f.page.Items, it)
	f.bytes += n
	f.largest = max(f.largest, n)
}

// yield is the share of a head that the streams of this name the page
// ended held as items (1 before any): heads count writes, so records
// updated many times make them overstate.
func (f *feedFill) yield(stream string) float64 {
	y := f.ended[stream]
	if y.bound == 0 {
		return 1
	}
	return float64(y.items) / float64(y.bound)
}

// RecordFeed reads one page of the feed from p.At: the stream it stands
// in first, then the streams that hold data after it (StreamsChanged from
// the zero snapshot, which lists exactly those), whose reads are sent as
// one pipeline (pgrows.FeedReads) a round instead of a round trip each. A
// page costs what it holds: the streams listed are at most the items it
// may still take (each holds at least one), each round reads the streams
// its items are expected from (feedRound), and the rows read are bounded
// by the stream heads and the row budget, so empty streams are never
// looked at and a large stream is read a page at a time.
func (s *Store) RecordFeed(ctx context.Context, p RecordFeedParams) (FeedPage, error) {
	f := &feedFill{p: p, page: FeedPage{Items: make([]FeedItem, 0, min(p.Limit, 64))}, at: p.At, ended: map[string]feedYield{}}
	var queue []feedStream
	if p.At.In != nil && !reads(p.Groups, StreamHead{RestaurantID: p.At.RestaurantID, Stream: p.At.Stream}) {
		// Signed is not trusted (cursor.Codec.Open): a position inside a
		// stream the key does not read reads nothing of it.
		p.At.In = nil
		f.at.In = nil
	}
	if p.At.In != nil {
		queue = append(queue, resumed(p.At.RestaurantID, p.At.Stream, p.At.In))
	}
	listAfter := FeedAt{RestaurantID: p.At.RestaurantID, Stream: p.At.Stream}
	exhausted := false
	for rounds := 0; !f.full(); rounds++ {
		if rounds == feedMaxRounds && len(f.page.Items) > 0 {
			// A page may end before its limit (clients follow nextCursor):
			// its reads stay a few round trips whatever the data.
			break
		}
		if len(queue) == 0 {
			if exhausted {
				break
			}
			want := f.rem()
			heads, err := s.StreamsChanged(ctx, StreamsChangedParams{Groups: p.Groups, Since: p.Since,
				AfterRestaurant: listAfter.RestaurantID, AfterStream: listAfter.Stream, Limit: want})
			if err != nil {
				return FeedPage{}, err
			}
			exhausted = len(heads) <= want
			heads = heads[:min(len(heads), want)]
			if queue, err = s.feedQueue(ctx, p.Since, queue, heads); err != nil {
				return FeedPage{}, err
			}
			if len(heads) == 0 {
				break
			}
			last := heads[len(heads)-1]
			listAfter = FeedAt{RestaurantID: last.RestaurantID, Stream: last.Stream}
		}
		var err error
		if queue, err = s.feedRound(ctx, f, queue); err != nil {
			return FeedPage{}, err
		}
	}
	more := f.at.In != nil || len(queue) > 0
	if !more && !exhausted {
		// The page ended with a stream: is there one after it? (Else the
		// next page would be an empty last page, one more request.)
		heads, err := s.StreamsChanged(ctx, StreamsChangedParams{Groups: p.Groups, Since: p.Since,
			AfterRestaurant: f.at.RestaurantID, AfterStream: f.at.Stream, Limit: 0})
		if err != nil {
			return FeedPage{}, err
		}
		more = len(heads) > 0
	}
	if more {
		at := f.at
		f.page.Next = &at
	}
	return f.page, nil
}

// resumed is a stream read again from a position inside it: a walk has at
// most as many items left as positions between it and its pin.
func resumed(restaurantID, stream string, in *WalkPos) feedStream {
	st := feedStream{restaurantID: restaurantID, stream: stream, head: -1, in: in}
	if stream != DeliveryStream {
		st.head = max(in.Pinned-in.After, 0)
	}
	return st
}

// feedPlan picks the reads of a round and, for each, the stream of queue
// it reads (of).
//
// Stream k of a round has at least k items before it (each stream holds
// one), so it may take at most budget-k rows, and never more than its
// head: with these caps, a stream that holds more than its cap fills the
// page (or the row budget), and no read after it is wasted. Streams are
// added while the items expected before them (their caps, at the share of
// heads earlier streams held) leave the budget unfilled, so a round reads
// the streams the page needs and about no more; records updated many times
// (heads that overstate) lower that share and widen the next round, instead
// of one stream a round. Streams added beyond what the caps alone promise
// to fill are read with about the items expected of them, so that a large
// one among them costs its share, not the page; the streams a round left
// part-read are continued together in the next (from what it read of
// them), not one round each.
func (f *feedFill) feedPlan(queue []feedStream) (reads []pgrows.FeedRead, of []int) {
	budget := f.rowBudget()
	promised, expected := 0, 0.0
	for k, st := range queue {
		if k > 0 && (k >= budget || expected >= float64(budget)) {
			break
		}
		in, head, held := st.next()
		expected += float64(held)
		promised += held
		if in == nil && st.read != nil {
			continue // read whole already
		}
		c := max(1, budget-k-held)
		if head >= 0 {
			c = max(1, min(c, int(head)))
		}
		if st.read != nil {
			// A stream that held more than it was read for: expect its head.
			expected += float64(c)
		} else {
			expected += f.yield(st.stream) * float64(c)
		}
		if promised >= budget {
			c = min(c, max(2, int(math.Ceil(2*f.yield(st.stream)*float64(c)))))
		}
		promised += c
		r := pgrows.FeedRead{RestaurantID: st.restaurantID, MaxRows: int32(c)}
		if left := f.p.MaxBytes - f.bytes; left > 0 {
			// The rows are planned from the largest item seen so far: a
			// stream of larger ones ends the read at the page's bytes.
			r.MaxBytes = int64(left)
		}
		if st.stream != DeliveryStream {
			r.Collection = st.stream
		} else {
			// A delivery has no pin to say the stream ended: one row
			// more tells.
			r.MaxRows++
		}
		if in != nil {
			r.After = in.After
			if r.Collection != "" {
				pinned := in.Pinned
				r.Pinned = &pinned
			}
		}
		reads = append(reads, r)
		of = append(of, k)
	}
	return reads, of
}

// next is where the next read of st starts (in nil: at its start; nil
// with st.read set: nothing left to read), the items it may hold from
// there (-1: unknown) and the rows already read of it (held).
func (st *feedStream) next() (in *WalkPos, head int64, held int) {
	if st.read == nil {
		return st.in, st.head, 0
	}
	if !st.partRead {
		return nil, 0, st.held()
	}
	if st.read.Collection == "" {
		d := st.rows.Deliveries
		head = -1
		if st.head >= 0 {
			head = max(st.head-int64(len(d)), 0)
		}
		return &WalkPos{After: d[len(d)-1].ReceivedSequence}, head, len(d)
	}
	pin, last := walkEnd(*st.read, st.rows.Walk)
	return &WalkPos{Pinned: pin, After: last}, max(pin-last, 0), len(st.rows.Walk)
}

// held is the rows read of st (a walk's marker row is none).
func (st *feedStream) held() int {
	if st.read.Collection == "" {
		return len(st.rows.Deliveries)
	}
	n := 0
	for _, w := range st.rows.Walk {
		if w.RecordID != "" {
			n++
		}
	}
	return n
}

// walkEnd is the pin of a walk read and the last position its rows
// reached (of either branch of the statement).
func walkEnd(r pgrows.FeedRead, rows []db.RecordWalkPageRow) (pin, last int64) {
	if r.Pinned != nil {
		pin = *r.Pinned
	} else if len(rows) > 0 {
		pin = rows[0].Pinned
	}
	last = r.After
	for _, w := range rows {
		if w.RecordID != "" {
			last = max(last, w.Sequence)
		}
	}
	return pin, last
}

// absorb keeps a read of st: its first, or one continuing what a round
// read of it before (the rows go after those, a walk's marker dropped).
func (st *feedStream) absorb(r pgrows.FeedRead, rows pgrows.FeedRows) {
	if r.Collection == "" {
		st.partRead = len(rows.Deliveries) >= int(r.MaxRows) || rows.Cut
	}
	if st.read == nil {
		st.rows = rows
	} else {
		// take reads a delivery stream's end off all the rows held: more
		// may follow when this read filled its own MaxRows.
		r.MaxRows += int32(len(st.rows.Deliveries))
		st.rows.Deliveries = append(st.rows.Deliveries, rows.Deliveries...)
		st.rows.Cut = rows.Cut
		for _, w := range rows.Walk {
			if w.RecordID != "" {
				st.rows.Walk = append(st.rows.Walk, w)
			}
		}
	}
	st.read = &r
	if r.Collection != "" {
		pin, last := walkEnd(r, st.rows.Walk)
		st.partRead = st.held() > 0 && last < pin
	}
}

// feedRound sends the reads feedPlan picks in one pipeline and takes the
// streams' items into the page, in order, until it is full or reaches a
// stream left part-read. It returns the streams still to take: that
// stream first, from its position, and the streams read after it with
// what was read of them, continued or taken in the next round (no read is
// sent twice).
func (s *Store) feedRound(ctx context.Context, f *feedFill, queue []feedStream) ([]feedStream, error) {
	if reads, of := f.feedPlan(queue); len(reads) > 0 {
		for i, r := range reads {
			reads[i].Summed = r.Collection != "" && s.wide.summed(r.RestaurantID, r.Collection, r.MaxRows, byteBound(r.MaxBytes))
		}
		results, err := pgrows.FeedReads(ctx, s.pool, reads)
		if err != nil {
			return nil, translate(err)
		}
		for i, k := range of {
			if results[i].Declined && int64(reads[i].MaxBytes) >= int64(f.p.MaxBytes) {
				// Only a read bounded by the whole page teaches much: one
				// bounded by what a nearly full page has left declines
				// streams of ordinary records too.
				s.wide.declined(reads[i].RestaurantID, reads[i].Collection, reads[i].MaxRows, byteBound(reads[i].MaxBytes))
			}
			queue[k].absorb(reads[i], results[i])
		}
	}
	for k, st := range queue {
		if st.read == nil {
			return queue[k:], nil
		}
		taken := len(f.page.Items)
		more, err := f.take(st, *st.read, st.rows)
		if err != nil {
			return nil, err
		}
		taken = len(f.page.Items) - taken
		if more {
			// Part-read: it comes first in the next round (or page).
			next := feedStream{restaurantID: st.restaurantID, stream: st.stream, head: st.head, in: st.in}
			if f.at.In != nil && f.at.RestaurantID == st.restaurantID && f.at.Stream == st.stream {
				next = resumed(st.restaurantID, st.stream, f.at.In)
				if st.stream == DeliveryStream && st.head >= 0 {
					next.head = max(st.head-int64(taken), 0)
				}
			}
			return append([]feedStream{next}, queue[k+1:]...), nil
		}
		if st.listed {
			y := f.ended[st.stream]
			y.items += taken
			y.bound += max(1, min(int(st.head), f.p.Limit))
			f.ended[st.stream] = y
		}
		if f.full() {
			return queue[k+1:], nil
		}
	}
	return nil, nil
}

// take adds the items of one stream read to the page until it is full;
// more reports that the stream may hold more than the page took. A walk
// ended once it returned the version at its pin (the walk stops there);
// its read returns exactly the rows up to some position, whichever branch
// of the statement each came from, so the page takes them all.
func (f *feedFill) take(st feedStream, r pgrows.FeedRead, rows pgrows.FeedRows) (more bool, err error) {
	if r.Collection == "" {
		return f.takeDeliveries(st, int(r.MaxRows), rows.Deliveries, rows.Cut)
	}
	page := walkRowsPage(st.restaurantID, st.stream, len(rows.Walk), r.Pinned, rows.Walk)
	for i := range page.Records {
		if f.full() {
			return true, nil
		}
		e := &page.Records[i]
		f.add(FeedItem{RestaurantID: st.restaurantID, Stream: st.stream, Record: e}, envelopeSize(e))
		f.at = FeedAt{RestaurantID: st.restaurantID, Stream: st.stream, In: &WalkPos{Pinned: page.Pinned, After: int64(e.Sequence)}}
	}
	if n := len(page.Records); n > 0 && int64(page.Records[n-1].Sequence) < page.Pinned {
		return true, nil
	}
	f.end(st, page.Pinned)
	return false, nil
}

// takeDeliveries is take for the deliveries stream; cut: the read left
// rows out beyond its bytes.
func (f *feedFill) takeDeliveries(st feedStream, maxRows int, rows []db.Delivery, cut bool) (more bool, err error) {
	last := int64(0)
	if st.in != nil {
		last = st.in.After
	}
	var dec tempsDecoder
	for _, r := range rows {
		if f.full() {
			return true, nil
		}
		d, err := dec.fromRow(r)
		if err != nil {
			return false, err
		}
		f.add(FeedItem{RestaurantID: st.restaurantID, Stream: st.stream, Delivery: &d}, deliverySize(&d))
		last = r.ReceivedSequence
		f.at = FeedAt{RestaurantID: st.restaurantID, Stream: st.stream, In: &WalkPos{After: last}}
	}
	if len(rows) >= maxRows || cut {
		// As many as asked for, or as many bytes: there may be more.
		return true, nil
	}
	f.end(st, last)
	return false, nil
}

// end records that the page returned the last item of st.
func (f *feedFill) end(st feedStream, head int64) {
	f.page.Ended = append(f.page.Ended, FeedEnd{RestaurantID: st.restaurantID, Stream: st.stream, Head: head})
	f.at = FeedAt{RestaurantID: st.restaurantID, Stream: st.stream}
}

// envelopeSize estimates a record's JSON: its data as stored and its text
// members.
func envelopeSize(e *wire.Envelope) int {
	n := feedItemOverhead + len(e.Data) + len(e.ID) + 2*(len(e.RestaurantID)+len(e.Collection)) + len(e.MutationID)
	if e.SourceVersion != nil {
		n += len(*e.SourceVersion)
	}
	return n
}

// deliverySize estimates a delivery's JSON.
func deliverySize(d *wire.Delivery) int {
	n := 2*feedItemOverhead + len(d.ID) + 2*len(d.RestaurantID) + len(d.Supplier.ID) + len(d.Supplier.Name)
	for _, t := range d.TemperatureRecords {
		n += 64 + len(t.Product) + len(t.LotNumber) + len(t.Unit) + len(t.Value)
	}
	for _, s := range d.NonComplianceReasons {
		n += 4 + len(s)
	}
	for _, s := range d.CorrectiveActions {
		n += 4 + len(s)
	}
	if d.Commentary != nil {
		n += len(*d.Commentary)
	}
	return n
}
