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

// RestaurantIDsAfter lists up to n restaurant ids after `after`, in id
// order: the jobs that work restaurant by restaurant page through them.
func (s *Store) RestaurantIDsAfter(ctx context.Context, after string, n int) ([]string, error) {
	ids, err := s.q.RestaurantIDsAfter(ctx, db.RestaurantIDsAfterParams{After: after, MaxRows: int32(n)})
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

// ChangesCompact drops the data of up to n versions of the restaurant
// superseded before horizon (epoch ms), oldest first, and says how many.
func (s *Store) ChangesCompact(ctx context.Context, restaurantID string, now, horizon int64, n int) (int64, error) {
	rows, err := s.q.RecordChangesCompact(ctx, db.RecordChangesCompactParams{
		Now: now, RestaurantID: restaurantID, Horizon: horizon, MaxRows: int32(n)})
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
