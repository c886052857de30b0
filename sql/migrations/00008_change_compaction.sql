-- +goose NO TRANSACTION
-- +goose Up

-- Compaction of the change log (see RecordChangesCompact). A version
-- superseded longer ago than any walk cursor can live is never read by a
-- walk again, so its data can go; its row stays, so that its mutation id
-- still answers a replay and is never applied twice.
--
-- superseded_at: when the version was superseded (the received_at of the
-- change that superseded it), set by ingest from this release on. Versions
-- superseded before it have none: the compaction job stamps them with the
-- time it first sees them, which is later than the truth, so they are
-- compacted later than they could be, never earlier.
-- compacted_at: when the job dropped the version's data; null while the
-- data is kept.
--
-- Every step converges when re-run after an interruption; the indexes are
-- built CONCURRENTLY, so ingest and walks go on during the build.
ALTER TABLE record_changes ADD COLUMN IF NOT EXISTS superseded_at bigint;
ALTER TABLE record_changes ADD COLUMN IF NOT EXISTS compacted_at bigint;
ALTER TABLE record_changes DROP CONSTRAINT IF EXISTS record_changes_compacted_superseded;
-- Only a superseded version is compacted, and a compacted one has no data.
-- No row is compacted yet, so validating it reads the table once without
-- blocking writes (NOT VALID, then VALIDATE).
ALTER TABLE record_changes ADD CONSTRAINT record_changes_compacted_superseded
    CHECK (compacted_at IS NULL OR (superseded_by IS NOT NULL AND data IS NULL)) NOT VALID;
ALTER TABLE record_changes VALIDATE CONSTRAINT record_changes_compacted_superseded;

COMMENT ON COLUMN record_changes.superseded_at IS
    'Epoch milliseconds when the version was superseded (received_at of the next change of the record); for versions superseded before migration 00008, when the compaction job first saw them. Null while current.';
COMMENT ON COLUMN record_changes.compacted_at IS
    'Epoch milliseconds when the compaction job dropped data (superseded longer ago than FOODSAFE_COMPACT_AFTER). The row stays so its mutation id answers replays forever; deleted keeps its meaning.';

-- The compaction job's work lists, per restaurant (one shard on Citus).
-- Their predicates differ from the walk index's (superseded_at, not
-- superseded_by), so a walk can never take one for
-- record_changes_superseded_idx, nor the job that one for these, with or
-- without statistics. Both shrink as the job works.
DROP INDEX CONCURRENTLY IF EXISTS record_changes_compactable_idx;
CREATE INDEX CONCURRENTLY record_changes_compactable_idx ON record_changes (restaurant_id, superseded_at)
    WHERE superseded_at IS NOT NULL AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_compactable_idx IS
    'Superseded versions not yet compacted, by restaurant and superseded_at: the compaction job''s range scans. Bounded by the versions superseded within FOODSAFE_COMPACT_AFTER.';
DROP INDEX CONCURRENTLY IF EXISTS record_changes_unstamped_idx;
CREATE INDEX CONCURRENTLY record_changes_unstamped_idx ON record_changes (restaurant_id)
    WHERE superseded_by IS NOT NULL AND superseded_at IS NULL;
COMMENT ON INDEX record_changes_unstamped_idx IS
    'Versions superseded without superseded_at (before migration 00008, or by a binary older than it during a rolling deploy): the compaction job stamps them. Empty once it has.';

-- Walks read only versions that are not compacted (a valid cursor never
-- needs one), so the walk index keeps only those: its size follows the
-- writes of the compaction window, not the whole history.
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_live_idx;
CREATE INDEX CONCURRENTLY record_changes_superseded_live_idx ON record_changes (restaurant_id, collection, superseded_by)
    WHERE superseded_by IS NOT NULL AND compacted_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_idx;
ALTER INDEX record_changes_superseded_live_idx RENAME TO record_changes_superseded_idx;
COMMENT ON INDEX record_changes_superseded_idx IS
    'Versions superseded and not compacted, by stream and superseded_by: walk pages read the range superseded after their pin.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_all_idx;
CREATE INDEX CONCURRENTLY record_changes_superseded_all_idx ON record_changes (restaurant_id, collection, superseded_by)
    WHERE superseded_by IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_idx;
ALTER INDEX record_changes_superseded_all_idx RENAME TO record_changes_superseded_idx;
DROP INDEX CONCURRENTLY IF EXISTS record_changes_unstamped_idx;
DROP INDEX CONCURRENTLY IF EXISTS record_changes_compactable_idx;
ALTER TABLE record_changes DROP CONSTRAINT IF EXISTS record_changes_compacted_superseded;
ALTER TABLE record_changes DROP COLUMN IF EXISTS compacted_at;
ALTER TABLE record_changes DROP COLUMN IF EXISTS superseded_at;
