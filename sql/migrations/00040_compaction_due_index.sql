-- +goose NO TRANSACTION
-- +goose Up

-- The compaction job finds the restaurants it has work in from this
-- index (RecordChangesCompactionDue), then compacts those alone, one
-- restaurant per statement as before (record_changes_compactable_idx).
-- Until now it visited every restaurant, two statements each at every
-- run: 40,000 statements every 10 minutes for 20,000 restaurants with
-- nothing to compact. Keyed by superseded_at first, the versions due
-- (superseded before the horizon, not yet compacted) are one range at
-- the start of the index: a run with nothing due reads one leaf page,
-- and one with work reads the versions it compacts.
--
-- Partial, so it holds only the versions superseded within
-- FOODSAFE_COMPACT_AFTER plus those due; ingest writes one more entry per
-- superseded version. Its predicate names superseded_by as well as
-- superseded_at (every stamped version is superseded, so it holds the
-- same rows as record_changes_compactable_idx): only a statement naming
-- all three columns, RecordChangesCompactionDue's alone, can take it, so
-- the per-restaurant statements keep record_changes_compactable_idx and
-- never range over every restaurant's versions.
--
-- Built CONCURRENTLY (ingest writes record_changes all the time); converges
-- when re-run after an interruption. Until the new binaries run, old ones
-- go on visiting every restaurant and never read it.
DROP INDEX CONCURRENTLY IF EXISTS record_changes_compaction_due_idx;
CREATE INDEX CONCURRENTLY record_changes_compaction_due_idx ON record_changes (superseded_at, restaurant_id)
    WHERE superseded_by IS NOT NULL AND superseded_at IS NOT NULL AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_compaction_due_idx IS
    'Superseded versions not yet compacted, by superseded_at then restaurant: the compaction job finds the restaurants with versions past the horizon in one range scan, whatever the number of restaurants.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS record_changes_compaction_due_idx;
