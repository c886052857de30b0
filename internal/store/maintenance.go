package store

import (
	"context"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// The maintenance jobs' statements. Each is one short statement (a batch
// of at most max rows, or one DDL statement), run outside any transaction
// of the caller's, so that no job holds locks for longer than one batch
// and a job killed halfway leaves only whole batches behind.

// ChangeDue is one version the compaction job may compact: its
// restaurant and when it was superseded (epoch ms), the position of the
// next page of ChangesDue.
type ChangeDue struct {
	RestaurantID string
	SupersededAt int64
}

// ChangesDue lists up to n versions superseded before horizon and not
// compacted, after `after` in order of (superseded_at, restaurant): the
// compaction job compacts the restaurants they name and no other.
func (s *Store) ChangesDue(ctx context.Context, horizon int64, after ChangeDue, n int) ([]ChangeDue, error) {
	rows, err := s.q.RecordChangesCompactionDue(ctx, db.RecordChangesCompactionDueParams{
		Horizon: horizon, AfterAt: after.SupersededAt, AfterRestaurant: after.RestaurantID, MaxRows: int32(n)})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]ChangeDue, len(rows))
	for i, r := range rows {
		out[i] = ChangeDue{RestaurantID: r.RestaurantID, SupersededAt: r.SupersededAt}
	}
	return out, nil
}

// ChangesUnstampedRestaurants lists up to n restaurants after `after`, in
// id order, that hold versions ChangesStamp has still to stamp.
func (s *Store) ChangesUnstampedRestaurants(ctx context.Context, after string, n int) ([]string, error) {
	ids, err := s.q.RecordChangesUnstampedRestaurants(ctx, db.RecordChangesUnstampedRestaurantsParams{After: after, MaxRows: int32(n)})
	return ids, translate(err)
}

// ChangesStamp gives up to n versions of the restaurant superseded before
// superseded_at existed the time now (epoch ms), and says how many it
// stamped.
func (s *Store) ChangesStamp(ctx context.Context, restaurantID string, now int64, n int) (int64, error) {
	rows, err := s.q.RecordChangesStampSuperseded(ctx, db.RecordChangesStampSupersededParams{
		Now: now, RestaurantID: restaurantID, MaxRows: int32(n)})
	return rows, translate(err)
}

// ChangesCompactParams says which versions ChangesCompact compacts.
type ChangesCompactParams struct {
	RestaurantID string
	// Now is the time of the run and Horizon the supersession time before
	// which a version's data goes (both epoch ms).
	Now, Horizon int64
	// Max bounds the batch.
	Max int
}

// ChangesCompact drops the data of up to p.Max versions of the restaurant
// superseded before p.Horizon, oldest first, and says how many.
func (s *Store) ChangesCompact(ctx context.Context, p ChangesCompactParams) (int64, error) {
	rows, err := s.q.RecordChangesCompact(ctx, db.RecordChangesCompactParams{
		Now: p.Now, RestaurantID: p.RestaurantID, Horizon: p.Horizon, MaxRows: int32(p.Max)})
	return rows, translate(err)
}

// ChangesCompactable counts, for a dry run, the restaurant's versions that
// compaction would stamp and those it would compact at horizon.
func (s *Store) ChangesCompactable(ctx context.Context, restaurantID string, horizon int64) (unstamped, compactable int64, err error) {
	r, err := s.q.RecordChangesCompactable(ctx, db.RecordChangesCompactableParams{Horizon: horizon, RestaurantID: restaurantID})
	return r.Unstamped, r.Compactable, translate(err)
}

// AuditPartitionCreate creates the audit partition of day (UTC) unless
// one covers it; true when it created one.
func (s *Store) AuditPartitionCreate(ctx context.Context, day time.Time) (bool, error) {
	created, err := s.q.AuditPartitionCreate(ctx, utcDay(day))
	return created, translate(err)
}

// AuditPartitionsEndingBy lists the audit partitions whose every event is
// older than horizon, oldest first.
func (s *Store) AuditPartitionsEndingBy(ctx context.Context, horizon time.Time) ([]string, error) {
	names, err := s.q.AuditPartitionsEndingBy(ctx, horizon)
	return names, translate(err)
}

// AuditPartitionDrop drops one audit partition (a name from
// AuditPartitionsEndingBy; the database refuses any other table).
func (s *Store) AuditPartitionDrop(ctx context.Context, name string) error {
	return translate(s.q.AuditPartitionDrop(ctx, name))
}

// AuditDeleteBeforePartitioning deletes up to max events older than
// horizon from the partition holding the rows written before partitioning
// (audit_events_before_YYYYMMDD), oldest first, and returns how many. That
// partition covers every day before the upgrade, so it would only be
// dropped whole once its newest day passed retention: years of events
// kept for another retention period. The horizon is held to the
// partition's end, so day partitions keep their whole-day retention.
func (s *Store) AuditDeleteBeforePartitioning(ctx context.Context, horizon time.Time, max int) (int64, error) {
	ends, err := s.q.AuditBeforePartitioningBound(ctx)
	if err != nil || len(ends) == 0 {
		return 0, translate(err)
	}
	if ends[0].Before(horizon) {
		horizon = ends[0]
	}
	n, err := s.q.AuditEventsDeleteOldest(ctx, db.AuditEventsDeleteOldestParams{Horizon: horizon, MaxRows: int32(max)})
	return n, translate(err)
}

func utcDay(t time.Time) pgtype.Date {
	t = t.UTC()
	return pgtype.Date{Time: time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), Valid: true}
}

// WithJobLock runs f while holding the session-level advisory lock of the
// job called name, so that among all processes sharing the database one
// at most runs the job at a time. It returns ran=false, without running f,
// when another process holds the lock. The lock lives on one pooled
// connection kept for the duration of f; if that connection dies the
// server releases the lock, which is why every job is also safe to run
// twice at once (its batches skip rows another holds) — the lock is about
// not doing the same work twice, not about correctness.
func (s *Store) WithJobLock(ctx context.Context, name string, f func(context.Context) error) (ran bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer conn.Release()
	key := jobLockKey(name)
	q := db.New(conn)
	ok, err := q.JobLockTry(ctx, key)
	if err != nil || !ok {
		return false, translate(err)
	}
	defer func() {
		// A connection that cannot unlock is not returned to the pool
		// holding the lock: closing it releases the lock server-side.
		if _, uerr := q.JobLockRelease(context.WithoutCancel(ctx), key); uerr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	return true, f(ctx)
}

// jobLockKey maps a job name to its advisory lock key, in a space of our
// own: the high 32 bits are a fixed tag ("fsjb"), so that no other user of
// advisory locks in the database collides with a job by accident.
func jobLockKey(name string) int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int64(0x6673_6a62)<<32 | int64(h.Sum32())
}

// BlobClaim claims the bytes of sha for an upload about to write them
// (now in epoch ms), in a statement of its own: the blob collector leaves
// them alone for its grace period from now. Call it before writing.
func (s *Store) BlobClaim(ctx context.Context, sha string, now int64) error {
	return translate(s.q.BlobClaim(ctx, db.BlobClaimParams{Sha256: sha, Now: now}))
}

// BlobCandidates lists up to n digests after `after`, in order, whose
// latest claim is older than horizon (epoch ms).
func (s *Store) BlobCandidates(ctx context.Context, after string, horizon int64, n int) ([]string, error) {
	shas, err := s.q.BlobCandidates(ctx, db.BlobCandidatesParams{After: after, Horizon: horizon, MaxRows: int32(n)})
	return shas, translate(err)
}

// BlobCollect deletes the bytes of sha (with del) and everything that
// names them, when its claim is older than horizon (epoch ms), no delivery
// image uses them, and every asset stored under them is dead (its record
// deleted or naming another file) since before horizon. It says whether
// it collected; a dry run checks the same and changes nothing.
//
// One transaction: the claim's row lock first (an upload claiming the
// bytes now waits, then writes them again), then the locks of the streams
// of every asset stored under them (ingest and uploads hold these while
// they read or write a stream's assets), then the check again under the
// locks, then the deletion of the dead assets, the bytes and the claim.
// Bytes deleted by a transaction that then fails to commit leave the claim
// and the rows behind, and the next run finishes the work.
func (s *Store) BlobCollect(ctx context.Context, sha string, horizon int64, dryRun bool, del func(context.Context) error) (bool, error) {
	collected := false
	err := s.inTx(ctx, func(q *db.Queries) error {
		_, err := q.BlobLock(ctx, db.BlobLockParams{Sha256: sha, Horizon: horizon})
		if ok, err := found(err); !ok {
			return err // nil when claimed since, or held by another transaction
		}
		_, err = q.BlobImageReferenced(ctx, sha)
		if used, err := found(err); err != nil || used {
			return err
		}
		refs, err := q.BlobAssetReferences(ctx, sha)
		if err != nil || !allDead(refs, horizon) {
			return err
		}
		var last db.StreamLockParams
		for _, r := range refs {
			stream := db.StreamLockParams{RestaurantID: r.RestaurantID, Collection: r.Collection}
			if stream == last {
				continue
			}
			last = stream
			if err := q.StreamLock(ctx, stream); err != nil {
				return err
			}
		}
		if refs, err = q.BlobAssetReferences(ctx, sha); err != nil || !allDead(refs, horizon) {
			return err
		}
		if dryRun {
			collected = true
			return nil
		}
		if _, err := q.AssetUploadsDeleteDead(ctx, sha); err != nil {
			return err
		}
		if err := del(ctx); err != nil {
			return err
		}
		if err := q.BlobDelete(ctx, sha); err != nil {
			return err
		}
		collected = true
		return nil
	})
	return collected && err == nil, err
}

// allDead: no asset of refs is live, and none of their records changed
// since horizon (a reference that died recently keeps its bytes for the
// grace period too).
func allDead(refs []db.BlobAssetReferencesRow, horizon int64) bool {
	for _, r := range refs {
		if r.Live || r.ReceivedAt >= horizon {
			return false
		}
	}
	return true
}
