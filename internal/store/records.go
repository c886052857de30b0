package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// RecordKey names one record: the restaurant, collection and record id of
// every record-level request path.
type RecordKey struct {
	RestaurantID string
	Collection   string
	RecordID     string
}

func (k RecordKey) getParams() db.RecordGetParams {
	return db.RecordGetParams{RestaurantID: k.RestaurantID, Collection: k.Collection, RecordID: k.RecordID}
}

// Mutation is one validated snapshot to ingest.
type Mutation struct {
	RecordKey
	MutationID string
	Deleted    bool
	// Data is the record's JSON; nil for a tombstone.
	Data           json.RawMessage
	CapturedAt     int64
	PayloadVersion int32
	// RequestSHA256 fingerprints the request body, to tell replays from
	// conflicting reuse of a mutation id.
	RequestSHA256 []byte
	// CarriesFiles marks the collections whose data.asset status the
	// service owns (see normaliseAsset).
	CarriesFiles bool
	// Events marks event collections: a live record captured before the
	// restaurant's enablement is refused (noBackfill).
	Events bool
}

// Ingested says how RecordIngest answered a mutation.
type Ingested uint8

const (
	// Applied: a new change, now the record's current state (or, when a
	// newer change arrived first, a version of its history).
	Applied Ingested = iota
	// Replayed: the mutation id was used before by the same request; the
	// envelope is the state that change produced.
	Replayed
	// ReplayedCompacted: a replay of a change whose data was compacted
	// (superseded longer ago than the compaction window). The envelope
	// carries the change's identity (record, sequence, mutation id,
	// deleted, times) without data; nothing was applied.
	ReplayedCompacted
)

// RecordIngest applies a mutation: it takes the next sequence of the
// stream, appends the change and makes it the record's current state, in
// one transaction. receivedAt is the caller's receive time (at least
// m.CapturedAt); under the stream's lock it is raised to the stream's last
// receivedAt, so receivedAt never decreases as sequence grows
// (StreamNextSequence). A mutation id seen before answers as it did the first
// time (Replayed, or ReplayedCompacted once its data was compacted) when
// the request is the same, and is a conflict otherwise. Identical requests
// racing each other apply exactly once.
//
// The replay check and the backfill check read before the write, outside
// its transaction (under READ COMMITTED each statement reads its own
// snapshot anyway); the write then holds the stream's lock for as short a
// time as it can: on plain PostgreSQL the two statements are one pipeline
// in one implicit transaction, one round trip (sql/queries/records.sql,
// RecordApplyChange). A file-carrying record's asset is normalised under
// the stream lock, and Citus applies with three statements, so those write
// in a transaction of several round trips (apply). An identical
// request that commits between the check and the write makes the write
// fail whole, its position with it; it is answered as the replay it is.
func (s *Store) RecordIngest(ctx context.Context, m Mutation, receivedAt int64) (wire.Envelope, Ingested, error) {
	if out, how, ok, err := s.replayed(ctx, m); ok || err != nil {
		return out, how, err
	}
	return s.ingestNew(ctx, m, receivedAt)
}

// ingestNew is RecordIngest for a mutation id the replay check did not
// find, which may have been taken since.
func (s *Store) ingestNew(ctx context.Context, m Mutation, receivedAt int64) (wire.Envelope, Ingested, error) {
	if m.Events && !m.Deleted {
		if err := noBackfill(ctx, s.q, m.RestaurantID, m.CapturedAt, "/capturedAt"); err != nil {
			return wire.Envelope{}, Applied, err
		}
	}
	p := db.RecordChangeAppendParams{
		RestaurantID: m.RestaurantID, Collection: m.Collection, RecordID: m.RecordID,
		MutationID: m.MutationID, Deleted: m.Deleted, Data: m.Data, CapturedAt: m.CapturedAt,
		ReceivedAt: receivedAt, PayloadVersion: m.PayloadVersion, RequestSha256: m.RequestSHA256,
	}
	row, err := s.apply(ctx, m, p)
	if errors.Is(err, pgx.ErrNoRows) {
		// Taken by an identical (or conflicting) request meanwhile.
		out, how, ok, err := s.replayed(ctx, m)
		if err == nil && !ok {
			err = errors.New("store: the mutation id was taken, yet no change carries it")
		}
		return out, how, err
	}
	if err != nil {
		return wire.Envelope{}, Applied, translate(err)
	}
	return appliedVersion(row).envelope(), Applied, nil
}

// replayed answers a mutation whose id was used before (ok), as a replay
// or a conflict.
func (s *Store) replayed(ctx context.Context, m Mutation) (wire.Envelope, Ingested, bool, error) {
	prev, err := s.q.RecordChangeByMutation(ctx, db.RecordChangeByMutationParams{RestaurantID: m.RestaurantID, MutationID: m.MutationID})
	if ok, err := found(err); !ok || err != nil {
		return wire.Envelope{}, Applied, ok, err
	}
	out, how, err := replayOf(prev, m)
	return out, how, true, err
}

// apply writes a mutation that was not seen before; an error that is
// pgx.ErrNoRows (errors.Is) when its id was taken meanwhile (nothing is
// written then).
func (s *Store) apply(ctx context.Context, m Mutation, p db.RecordChangeAppendParams) (db.RecordChangeAppendRow, error) {
	citus, err := s.onCitus(ctx, s.q)
	if err != nil {
		return db.RecordChangeAppendRow{}, err
	}
	if !citus && !(m.CarriesFiles && !m.Deleted) {
		r, err := pgrows.RecordIngestApply(ctx, s.pool, db.StreamNextSequenceParams{RestaurantID: p.RestaurantID, Collection: p.Collection,
			ReceivedAt: p.ReceivedAt}, applyChangeParams(p))
		return db.RecordChangeAppendRow(r), mutationTaken(err)
	}
	var row db.RecordChangeAppendRow
	err = s.inTxConn(ctx, func(tx pgx.Tx, q *db.Queries) error {
		next, err := q.StreamNextSequence(ctx, db.StreamNextSequenceParams{RestaurantID: m.RestaurantID, Collection: m.Collection,
			ReceivedAt: p.ReceivedAt})
		if err != nil {
			return err
		}
		p.Sequence, p.ReceivedAt = next.LastSequence, next.LastReceivedAt
		if m.CarriesFiles && !m.Deleted {
			// Under the stream lock: an upload of this record has either
			// committed (and is reflected) or waits for us.
			if p.Data, err = normaliseAsset(ctx, q, m); err != nil {
				return err
			}
		}
		row, err = s.applyChange(ctx, tx, q, p)
		return err // pgx.ErrNoRows too: rolls back the sequence taken above
	})
	return row, err
}

// replayOf answers a mutation id already used: the stored envelope when the
// request is the same one, a conflict otherwise. A compacted change still
// has its identity and request digest, so it is told apart from a new
// change exactly as before; only its data is gone.
func replayOf(prev db.RecordChange, m Mutation) (wire.Envelope, Ingested, error) {
	if prev.Collection != m.Collection || prev.RecordID != m.RecordID || !bytes.Equal(prev.RequestSha256, m.RequestSHA256) {
		return wire.Envelope{}, Applied, apperr.New(apperr.Conflict,
			"mutationId %s was already used for a different change (other content, record or collection); use a new mutationId for a new change.", m.MutationID)
	}
	return changeVersion(prev).envelope(), replayedAs(prev), nil
}

// replayedAs is how a replay of change c answers: with its data, or as
// compacted once the data is gone.
func replayedAs(c db.RecordChange) Ingested {
	if c.CompactedAt != nil {
		return ReplayedCompacted
	}
	return Replayed
}

// RecordGet reads a record's current state, tombstones included; the one
// 404 when there is no such record.
func (s *Store) RecordGet(ctx context.Context, k RecordKey) (wire.Envelope, error) {
	r, err := s.q.RecordGet(ctx, k.getParams())
	if err != nil {
		return wire.Envelope{}, translate(err)
	}
	return recordVersion(recordOfRow(r)).envelope(), nil
}

// WalkPos is where a walk stands: pinned at stream position Pinned, having
// returned everything up to sequence After (what a cursor carries, and
// which positions are valid, is package cursor's).
type WalkPos struct {
	Pinned int64
	After  int64
}

// WalkPage is one page of a walk.
type WalkPage struct {
	Records []wire.Envelope
	// Pinned is the stream position the walk answers as of. A later walk
	// started from it (RecordChanges) returns what changed since.
	Pinned int64
	// Next continues the walk; nil on the last page.
	Next *WalkPos
}

// ErrAheadOfStream: a changes walk was asked for what changed since a
// position the stream has not reached. A stream never moves backwards, so
// the position was issued for data that no longer exists (a database
// restored or reset); the copy built from it must be rebuilt.
var ErrAheadOfStream = errors.New("position beyond the head of the stream")

// RecordWalkParams selects one page of a snapshot walk of one stream.
type RecordWalkParams struct {
	RestaurantID string
	Collection   string
	Limit        int
	// MaxBytes ends the page early, with the record whose bytes reach it
	// (0: no bound).
	MaxBytes int64
	// Pos continues a walk; nil starts one.
	Pos *WalkPos
}

// RecordWalk reads one page of a snapshot walk: records as they stood at
// the pinned position, by sequence ascending. The first page (p.Pos nil)
// pins the stream's current head. Next is nil on the last page; one extra
// row is read so a page that ends the walk exactly says so.
func (s *Store) RecordWalk(ctx context.Context, p RecordWalkParams) (WalkPage, error) {
	q := db.RecordWalkPageParams{RestaurantID: p.RestaurantID, Collection: p.Collection, MaxRows: int32(p.Limit + 1), MaxBytes: byteBound(p.MaxBytes)}
	if p.Pos != nil {
		q.Pinned, q.AfterSequence = &p.Pos.Pinned, p.Pos.After
	}
	return s.walkPage(ctx, p.Limit, q)
}

// RecordChangesParams selects the first page of a changes walk of one
// stream.
type RecordChangesParams struct {
	RestaurantID string
	Collection   string
	Limit        int
	// MaxBytes is RecordWalkParams.MaxBytes.
	MaxBytes int64
	// Since is the position of the walk the changes are since.
	Since int64
}

// RecordChanges reads the first page of a changes walk: it pins the
// stream's current head P2 and returns the records whose state at P2 was
// written after p.Since (created, updated or deleted since a walk pinned
// at p.Since), each once, in that state, by sequence. It is the walk query
// with after = p.Since, so later pages are ordinary RecordWalk pages.
// p.Since beyond the head is ErrAheadOfStream.
func (s *Store) RecordChanges(ctx context.Context, p RecordChangesParams) (WalkPage, error) {
	page, err := s.walkPage(ctx, p.Limit,
		db.RecordWalkPageParams{RestaurantID: p.RestaurantID, Collection: p.Collection, AfterSequence: p.Since, MaxRows: int32(p.Limit + 1),
			MaxBytes: byteBound(p.MaxBytes)})
	if err == nil && page.Pinned < p.Since {
		return WalkPage{}, ErrAheadOfStream
	}
	return page, err
}

// walkRows keeps the row buffers of walk pages between requests: a page
// is read on every walk request, and its rows are garbage as soon as they
// are converted to envelopes (pgrows.RecordWalkPageInto says what this saves).
var walkRows = sync.Pool{New: func() any { return new([]db.RecordWalkPageRow) }}

// maxPooledWalkRows bounds the row buffers kept: a page of the largest
// limit with its look-ahead row and as many versions read as of the pin,
// after append has grown the buffer for them (up to about twice). A page
// that read more (a walk pinned before a burst of updates) lets its
// buffer go.
const maxPooledWalkRows = 4 * (wire.MaxLimit + 1)

// putWalkRows returns a page's row buffer to walkRows, emptied: the pool
// keeps no record's data.
func putWalkRows(buf *[]db.RecordWalkPageRow, rows []db.RecordWalkPageRow) {
	if cap(rows) > maxPooledWalkRows {
		return
	}
	clear(rows)
	*buf = rows[:0]
	walkRows.Put(buf)
}

// byteBound is a page's bound in bytes as the walk statements take it:
// NULL for none.
func byteBound(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// walkPage runs one page of RecordWalkPage (limit rows, and one more to
// look ahead; at most p.MaxBytes of them, and one more record) and merges
// its branches. A page with no pin (the first of a
// walk or of a changes walk) is pinned at the head it reads and runs
// RecordWalkFirstPage, which says why. A stream s.wide knows to need the
// byte sum is read by the summed statement at once.
func (s *Store) walkPage(ctx context.Context, limit int, p db.RecordWalkPageParams) (WalkPage, error) {
	buf := walkRows.Get().(*[]db.RecordWalkPageRow)
	var (
		rows []db.RecordWalkPageRow
		cut  bool
		err  error
	)
	summed := s.wide.summed(p.RestaurantID, p.Collection, p.MaxRows, p.MaxBytes)
	var declined bool
	if p.Pinned == nil {
		rows, cut, declined, err = pgrows.RecordWalkFirstPageInto(ctx, s.pool, db.RecordWalkFirstPageParams{RestaurantID: p.RestaurantID,
			Collection: p.Collection, AfterSequence: p.AfterSequence, MaxRows: p.MaxRows, MaxBytes: p.MaxBytes}, slices.Grow((*buf)[:0], limit+1), summed)
	} else {
		rows, cut, declined, err = pgrows.RecordWalkPageInto(ctx, s.pool, p, slices.Grow((*buf)[:0], limit+1), summed)
	}
	defer putWalkRows(buf, rows) // every row read, before the page is cut to limit
	if declined {
		s.wide.declined(p.RestaurantID, p.Collection, p.MaxRows, p.MaxBytes)
	}
	if err != nil {
		return WalkPage{}, translate(err)
	}
	page := walkRowsPage(p.RestaurantID, p.Collection, limit, p.Pinned, rows)
	if n := len(page.Records); cut && page.Next == nil && n > 0 {
		// Cut by bytes: the walk continues after the page's last record,
		// whatever its count.
		page.Next = &WalkPos{Pinned: page.Pinned, After: int64(page.Records[n-1].Sequence)}
	}
	return page, nil
}

// walkRowsPage makes a page of at most limit records from the rows of a
// walk statement (limit and the look-ahead row; both branches of
// RecordWalkPage, which it sorts), pinned where the statement pinned it.
func walkRowsPage(restaurantID, collection string, limit int, pinned *int64, rows []db.RecordWalkPageRow) WalkPage {
	if len(rows) == 1 && rows[0].RecordID == "" {
		// The marker of an empty range: it only carries the pin.
		return WalkPage{Records: []wire.Envelope{}, Pinned: rows[0].Pinned}
	}
	out := WalkPage{Records: make([]wire.Envelope, 0, min(len(rows), limit))}
	if pinned != nil {
		out.Pinned = *pinned
	} else if len(rows) > 0 {
		out.Pinned = rows[0].Pinned
	}
	// Merge the two branches (current versions; versions as of the pin).
	slices.SortFunc(rows, func(a, b db.RecordWalkPageRow) int { return cmp.Compare(a.Sequence, b.Sequence) })
	if len(rows) > limit {
		rows = rows[:limit]
		out.Next = &WalkPos{Pinned: out.Pinned, After: rows[limit-1].Sequence}
	}
	for _, r := range rows {
		out.Records = append(out.Records, walkVersion(restaurantID, collection, r).envelope())
	}
	return out
}

// version is one stored state of a record, whichever table or query it
// was read from; each row type has its converter below. sqlc gives each
// query a row type of its own (with its own columns: the walk's rows carry
// no restaurant or collection, a change carries its digest), and Go's
// generics cannot read fields through a type parameter, so the four
// converters stay; their literals are keyed, so reordering version's
// fields, several of one type, cannot pair a column with the wrong field.
type version struct {
	restaurantID, collection, recordID string
	sequence                           int64
	mutationID                         string
	deleted                            bool
	data                               []byte
	capturedAt, receivedAt             int64
	sourceVersion                      *string
	payloadVersion                     int32
}

func recordVersion(r db.Record) version {
	return version{restaurantID: r.RestaurantID, collection: r.Collection, recordID: r.RecordID, sequence: r.Sequence,
		mutationID: r.MutationID, deleted: r.Deleted, data: r.Data, capturedAt: r.CapturedAt,
		receivedAt: r.ReceivedAt, sourceVersion: r.SourceVersion, payloadVersion: r.PayloadVersion}
}

func changeVersion(c db.RecordChange) version {
	return version{restaurantID: c.RestaurantID, collection: c.Collection, recordID: c.RecordID, sequence: c.Sequence,
		mutationID: c.MutationID, deleted: c.Deleted, data: c.Data, capturedAt: c.CapturedAt,
		receivedAt: c.ReceivedAt, sourceVersion: c.SourceVersion, payloadVersion: c.PayloadVersion}
}

// applyChange appends a change and makes it the record's current state,
// inside the caller's transaction, after StreamNextSequence took position
// p.Sequence: RecordApplyChange, one statement, on plain PostgreSQL (it
// reads the position back from the locked stream row); on Citus the three
// single-shard statements of RecordApply in one pipeline
// (sql/queries/records.sql says why both). pgx.ErrNoRows: the mutation id
// exists already; the transaction must then be rolled back.
func (s *Store) applyChange(ctx context.Context, tx pgx.Tx, q *db.Queries, p db.RecordChangeAppendParams) (db.RecordChangeAppendRow, error) {
	citus, err := s.onCitus(ctx, q)
	if err != nil {
		return db.RecordChangeAppendRow{}, err
	}
	if citus {
		return pgrows.RecordApply(ctx, tx, p)
	}
	r, err := q.RecordApplyChange(ctx, applyChangeParams(p))
	return db.RecordChangeAppendRow(r), mutationTaken(err)
}

func applyChangeParams(p db.RecordChangeAppendParams) db.RecordApplyChangeParams {
	return db.RecordApplyChangeParams{
		RestaurantID: p.RestaurantID, Collection: p.Collection, RecordID: p.RecordID, MutationID: p.MutationID,
		Deleted: p.Deleted, Data: p.Data, CapturedAt: p.CapturedAt,
		SourceVersion: p.SourceVersion, PayloadVersion: p.PayloadVersion, RequestSha256: p.RequestSha256,
	}
}

// onCitus says whether the database has the citus extension, asked once
// per process through q (inside a transaction, its own connection: a
// second one from the pool could wait forever for a full pool).
func (s *Store) onCitus(ctx context.Context, q *db.Queries) (bool, error) {
	citus := s.citus.Load()
	if citus == 0 {
		on, err := q.CitusInstalled(ctx)
		if err != nil {
			return false, err
		}
		citus = 1
		if on {
			citus = 2
		}
		s.citus.Store(citus)
	}
	return citus == 2, nil
}

// UseDistributedIngest makes ingest run the statements it runs on Citus
// whatever the database, so that tests on plain PostgreSQL cover them.
func (s *Store) UseDistributedIngest() { s.citus.Store(2) }

func appliedVersion(r db.RecordChangeAppendRow) version {
	return version{restaurantID: r.RestaurantID, collection: r.Collection, recordID: r.RecordID, sequence: r.Sequence,
		mutationID: r.MutationID, deleted: r.Deleted, data: r.Data, capturedAt: r.CapturedAt,
		receivedAt: r.ReceivedAt, sourceVersion: r.SourceVersion, payloadVersion: r.PayloadVersion}
}

func walkVersion(restaurantID, collection string, r db.RecordWalkPageRow) version {
	return version{restaurantID: restaurantID, collection: collection, recordID: r.RecordID, sequence: r.Sequence,
		mutationID: r.MutationID, deleted: r.Deleted, data: r.Data, capturedAt: r.CapturedAt,
		receivedAt: r.ReceivedAt, sourceVersion: r.SourceVersion, payloadVersion: r.PayloadVersion}
}

// envelope is the wire form of the version (spec 2.3); a tombstone has no
// data.
func (v version) envelope() wire.Envelope {
	e := wire.Envelope{
		ID: v.recordID, RestaurantID: v.restaurantID, Collection: v.collection, Deleted: v.deleted,
		CapturedAt: wire.Millis(v.capturedAt), ReceivedAt: wire.Millis(v.receivedAt), Sequence: wire.Sequence(v.sequence),
		MutationID: v.mutationID, SourceVersion: v.sourceVersion, PayloadVersion: v.payloadVersion, StateKind: wire.StateKind,
	}
	if !v.deleted && len(v.data) > 0 {
		e.Data = json.RawMessage(v.data)
	}
	return e
}
