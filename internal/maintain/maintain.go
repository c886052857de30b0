// Package maintain runs the jobs that keep storage proportional to live
// data plus a configured window: change-log compaction, audit partitions
// (creation ahead, retention) and the collection of unreferenced file
// bytes. `foodsafe serve` runs them on a
// schedule and `foodsafe maintain` once, for operators who prefer cron.
//
// Each job runs under a PostgreSQL advisory lock (store.WithJobLock), so
// among all replicas one at most runs it at a time. A lock rather than a
// job queue such as riverqueue/river: the jobs are periodic singletons
// with no payload, no fan-out and no retry policy beyond "next run", and
// a queue would add its own tables, migrations and worker pool to every
// deployment for that. Every job works in small batches of short
// statements (no long transaction, no lock held across batches; rows an
// ingest holds are skipped) and is idempotent, so a job killed halfway
// leaves whole batches behind and the next run carries on.
package maintain

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// Settings say how much to keep.
type Settings struct {
	// CompactAfter is how long a superseded version keeps its data
	// (FOODSAFE_COMPACT_AFTER); 0 never compacts.
	CompactAfter time.Duration
	// AuditRetention is how long audit events are kept
	// (FOODSAFE_AUDIT_RETENTION); 0 keeps them all.
	AuditRetention time.Duration
	// BlobGrace is how long unreferenced bytes are kept
	// (FOODSAFE_BLOB_GRACE); 0 keeps them all.
	BlobGrace time.Duration
	// Batch is the most rows one statement changes; 0 means 1000.
	Batch int
	// DryRun reports what the jobs would do and changes nothing.
	DryRun bool
}

// auditDaysAhead is how many days of audit partitions exist ahead of
// today, so that the writer never meets a missing one while the job runs
// (it would create the partition itself: no event is lost either way).
const auditDaysAhead = 7

// Job names: label values of the maintenance metrics and log lines.
const (
	JobCompaction      = "change-compaction"
	JobAuditPartitions = "audit-partitions"
	JobBlobGC          = "blob-gc"
	JobUploadExpiry    = "upload-expiry"
)

// Runner runs the jobs.
type Runner struct {
	store *store.Store
	blobs blob.Store
	log   *slog.Logger
	set   Settings
	now   func() time.Time
	jobs  []job
}

type job struct {
	name    string
	run     func(ctx context.Context) (int64, error)
	metrics *metrics.Job
}

// New makes a runner over the database and the file store, whose jobs
// report to m (nil: no metrics) every interval (declared for the lag
// alert; 0 for a one-off run). now may be nil (time.Now).
func New(st *store.Store, blobs blob.Store, log *slog.Logger, m *metrics.Metrics, set Settings, interval time.Duration, now func() time.Time) *Runner {
	if now == nil {
		now = time.Now
	}
	if set.Batch <= 0 {
		set.Batch = 1000
	}
	r := &Runner{store: st, blobs: blobs, log: log, set: set, now: now}
	r.jobs = []job{
		{name: JobCompaction, run: r.compact, metrics: m.Job(JobCompaction, interval)},
		{name: JobAuditPartitions, run: r.auditPartitions, metrics: m.Job(JobAuditPartitions, interval)},
		{name: JobBlobGC, run: r.collectBlobs, metrics: m.Job(JobBlobGC, interval)},
		{name: JobUploadExpiry, run: r.expireUploads, metrics: m.Job(JobUploadExpiry, interval)},
	}
	return r
}

// RunOnce runs every job once, each under its lock. A job another process
// is running is skipped (and logged); the errors of the others are joined.
func (r *Runner) RunOnce(ctx context.Context) error {
	var errs []error
	for _, j := range r.jobs {
		start := time.Now()
		var rows int64
		jctx, sp := startJob(ctx, j.name, r.set.DryRun)
		ran, err := r.store.WithJobLock(jctx, j.name, func(ctx context.Context) error {
			var err error
			rows, err = j.run(ctx)
			return err
		})
		endJob(jctx, sp, ran, rows, err)
		switch {
		case err != nil && ctx.Err() != nil:
			// Shutting down: the next run (here or on another replica)
			// carries on from the last whole batch.
			r.log.Info("maintenance job interrupted", "job", j.name, "rows", rows)
			return ctx.Err()
		case err != nil:
			j.metrics.Observe(start, rows, err)
			r.log.Error("maintenance job failed", "job", j.name, "rows", rows, "error", err)
			errs = append(errs, err)
		case !ran:
			r.log.Info("maintenance job skipped: another process is running it", "job", j.name)
		default:
			j.metrics.Observe(start, rows, nil)
			r.log.Info("maintenance job done", "job", j.name, "rows", rows, "dry_run", r.set.DryRun,
				"duration_ms", time.Since(start).Milliseconds())
		}
	}
	return errors.Join(errs...)
}

// jobSpans is the most statement spans one job's trace holds: enough to
// see where a run spends its time, where a compaction with work in
// 20,000 restaurants would otherwise send 40,000.
const jobSpans = 500

// startJob starts the trace of one run of a job: a root span of its own
// (a run is nobody's request), named "maintain compaction", over the
// statements it runs, at most jobSpans of them. With tracing off, the
// global provider makes nothing.
func startJob(ctx context.Context, name string, dryRun bool) (context.Context, trace.Span) {
	ctx, sp := otel.Tracer(span.Scope).Start(ctx, "maintain "+name, trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("foodsafe.job", name), attribute.Bool("foodsafe.job.dry_run", dryRun)))
	return span.WithBudget(ctx, jobSpans), sp
}

// endJob ends a job's span with its rows, whether it ran (another
// process may hold its lock), its failure and the statements left out.
func endJob(ctx context.Context, sp trace.Span, ran bool, rows int64, err error) {
	if sp.IsRecording() {
		sp.SetAttributes(attribute.Bool("foodsafe.job.ran", ran), attribute.Int64("foodsafe.job.rows", rows),
			attribute.Int64("foodsafe.spans_dropped", span.Dropped(ctx)))
		span.Fail(sp, err)
	}
	sp.End()
}

// Loop runs RunOnce now and then every interval until ctx ends. Failures
// are logged and counted; the next run tries again.
func (r *Runner) Loop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = r.RunOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// compact drops the data of versions superseded before now -
// CompactAfter, in batches of one restaurant each; first it stamps the
// versions superseded before superseded_at existed. It visits only the
// restaurants that have such versions, found from the job's indexes a
// page at a time, so a run with nothing to do costs two statements
// whatever the number of restaurants. It returns the versions compacted
// (a dry run: those it would compact or stamp).
func (r *Runner) compact(ctx context.Context) (int64, error) {
	if r.set.CompactAfter <= 0 {
		return 0, nil
	}
	now := r.now()
	horizon := now.Add(-r.set.CompactAfter).UnixMilli()
	var total int64
	err := r.eachUnstamped(ctx, func(id string) error {
		if r.set.DryRun {
			unstamped, _, err := r.store.ChangesCompactable(ctx, id, horizon)
			if unstamped > 0 {
				r.log.Info("would stamp", "job", JobCompaction, "restaurant", id, "versions_to_stamp", unstamped)
			}
			total += unstamped
			return err
		}
		return r.batches(ctx, func() (int64, error) {
			return r.store.ChangesStamp(ctx, id, now.UnixMilli(), r.set.Batch)
		}, nil)
	})
	if err != nil {
		return total, err
	}
	err = r.eachDue(ctx, horizon, func(id string) error {
		if r.set.DryRun {
			_, compactable, err := r.store.ChangesCompactable(ctx, id, horizon)
			if compactable > 0 {
				r.log.Info("would compact", "job", JobCompaction, "restaurant", id, "versions", compactable)
			}
			total += compactable
			return err
		}
		return r.batches(ctx, func() (int64, error) {
			return r.store.ChangesCompact(ctx, store.ChangesCompactParams{RestaurantID: id, Now: now.UnixMilli(), Horizon: horizon, Max: r.set.Batch})
		}, &total)
	})
	return total, err
}

// batches runs step until it changes fewer rows than a batch, adding the
// rows it changed to total (when not nil).
func (r *Runner) batches(ctx context.Context, step func() (int64, error), total *int64) error {
	for {
		n, err := step()
		if err != nil {
			return err
		}
		if total != nil {
			*total += n
		}
		if n < int64(r.set.Batch) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// eachUnstamped calls f with every restaurant holding versions still to
// stamp, in id order.
func (r *Runner) eachUnstamped(ctx context.Context, f func(id string) error) error {
	after := ""
	for {
		ids, err := r.store.ChangesUnstampedRestaurants(ctx, after, r.set.Batch)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := f(id); err != nil {
				return err
			}
		}
		if len(ids) < r.set.Batch {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// eachDue calls f once with every restaurant holding versions superseded
// before horizon and not compacted, in the order of its oldest such
// version. Once f has compacted a restaurant its versions leave the
// range, so the pages read what is left to do; visited remembers the
// restaurants of a dry run (which compacts nothing) and those whose rows
// an ingest held (skipped, for the next run), so that none is visited
// twice.
func (r *Runner) eachDue(ctx context.Context, horizon int64, f func(id string) error) error {
	visited := map[string]bool{}
	after := store.ChangeDue{SupersededAt: math.MinInt64}
	for {
		due, err := r.store.ChangesDue(ctx, horizon, after, r.set.Batch)
		if err != nil {
			return err
		}
		for _, d := range due {
			if visited[d.RestaurantID] {
				continue
			}
			visited[d.RestaurantID] = true
			if err := f(d.RestaurantID); err != nil {
				return err
			}
		}
		if len(due) < r.set.Batch {
			return nil
		}
		after = due[len(due)-1]
	}
}

// auditPartitions creates the audit partitions of yesterday to a week
// ahead (UTC days) where missing, drops the partitions holding only
// events older than AuditRetention, and deletes those events, in batches,
// from the partition of the rows written before partitioning (which spans
// every earlier day). It returns the partitions created and dropped plus
// the events deleted (a dry run: the partitions it would drop).
func (r *Runner) auditPartitions(ctx context.Context) (int64, error) {
	now := r.now()
	var n int64
	if !r.set.DryRun {
		for d := -1; d <= auditDaysAhead; d++ {
			created, err := r.store.AuditPartitionCreate(ctx, now.AddDate(0, 0, d))
			if err != nil {
				return n, err
			}
			if created {
				n++
			}
		}
	}
	if r.set.AuditRetention <= 0 {
		return n, nil
	}
	old, err := r.store.AuditPartitionsEndingBy(ctx, now.Add(-r.set.AuditRetention))
	if err != nil {
		return n, err
	}
	for _, name := range old {
		if r.set.DryRun {
			r.log.Info("would drop audit partition", "job", JobAuditPartitions, "partition", name)
			n++
			continue
		}
		if err := r.store.AuditPartitionDrop(ctx, name); err != nil {
			return n, err
		}
		r.log.Info("dropped audit partition", "job", JobAuditPartitions, "partition", name)
		n++
	}
	if r.set.DryRun {
		return n, nil
	}
	horizon := now.Add(-r.set.AuditRetention)
	var deleted int64
	err = r.batches(ctx, func() (int64, error) {
		return r.store.AuditDeleteBeforePartitioning(ctx, horizon, r.set.Batch)
	}, &deleted)
	if deleted > 0 {
		r.log.Info("deleted audit events written before partitioning", "job", JobAuditPartitions,
			"rows", deleted, "older_than", horizon)
	}
	return n + deleted, err
}

// collectBlobs deletes the bytes no live asset or delivery image has
// needed for BlobGrace (store.BlobCollect decides, under locks), walking
// the claims in digest order in batches. It returns the blobs deleted (a
// dry run: those it would delete).
func (r *Runner) collectBlobs(ctx context.Context) (int64, error) {
	if r.set.BlobGrace <= 0 || r.blobs == nil {
		return 0, nil
	}
	horizon := r.now().Add(-r.set.BlobGrace).UnixMilli()
	var n int64
	after := ""
	for {
		shas, err := r.store.BlobCandidates(ctx, after, horizon, r.set.Batch)
		if err != nil {
			return n, err
		}
		for _, sha := range shas {
			collected, err := r.store.BlobCollect(ctx, sha, horizon, r.set.DryRun, func(ctx context.Context) error {
				return r.blobs.Delete(ctx, sha)
			})
			if err != nil {
				return n, err
			}
			if collected {
				n++
				if r.set.DryRun {
					r.log.Info("would delete file", "job", JobBlobGC, "sha256", sha)
				}
			}
		}
		if len(shas) < r.set.Batch {
			return n, nil
		}
		after = shas[len(shas)-1]
	}
}

// expireUploads deletes the resumable uploads whose lifetime
// (FOODSAFE_UPLOAD_RESUME_LIFETIME) has run out: their partial bytes
// first, then their row, so a failure leaves the row for the next run and
// never bytes that nothing names. The requests on an expired upload
// already answer 404; a request still appending to one when it expires
// commits nothing (its row is gone).
func (r *Runner) expireUploads(ctx context.Context) (int64, error) {
	if r.blobs == nil {
		return 0, nil
	}
	var n int64
	for {
		keys, err := r.store.ResumptionsExpired(ctx, r.now().UnixMilli(), r.set.Batch)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			if r.set.DryRun {
				r.log.Info("would delete expired upload", "job", JobUploadExpiry, "upload", k.ID)
				continue
			}
			if err := r.blobs.PieceDiscard(ctx, k.ID); err != nil {
				return n, err
			}
			if _, err := r.store.ResumptionDelete(ctx, k.RestaurantID, k.ID); err != nil {
				return n, err
			}
			n++
		}
		if r.set.DryRun || len(keys) < r.set.Batch {
			return n, nil
		}
	}
}
