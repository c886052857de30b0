-- +goose NO TRANSACTION
-- +goose Up

-- What an ordinary autovacuum leaves behind, and the hot stream row
-- (docs/dbas.md, "Vacuum and the hot stream row"):
--
-- 1. records and collection_streams: vacuum_index_cleanup = on. Every
--    update of a record moves it in records_walk_idx (its sequence
--    changes), leaving a dead entry that walk pages step over. A plain
--    VACUUM (autovacuum's kind) skips index cleanup when fewer than 2% of
--    the table's pages hold dead items (PostgreSQL 14's bypass), which on
--    a large table is nearly always: the dead entries stayed until a
--    VACUUM (INDEX_CLEANUP ON), and walk pages stepped over them. Both tables' every update leaves index entries
--    that a reader steps over, so their vacuums always clean the indexes.
--    record_changes keeps the default: its indexes are read by record or
--    by mutation id, never as a range over a stream's updates.
--
-- 2. collection_streams: updates HOT again. Every ingest updates its
--    stream's row; PostgreSQL writes an update as a heap-only tuple (no
--    new index entries, reclaimed by any reader of the page without
--    VACUUM) only when no indexed column changes. changed_xact, which
--    changes on every write, was indexed (collection_streams_changed_idx,
--    00015; collection_streams_xact_idx, 00021): each write added an entry
--    to all three indexes and a hot stream's row piled up dead versions
--    only VACUUM reclaims. The indexes now key
--    changed_epoch instead, changed_xact / 1024 (a generated column, so
--    every writer, of any release, keeps it exact): it changes once per
--    1,024 transactions service-wide, so nearly every update of a busy
--    stream is HOT. GET /v1/changes reads the index range from the
--    position's epoch and checks changed_xact on those rows: at most the
--    streams written in the 1,023 transactions before its position more.
--    fillfactor 70 leaves each page room for its rows' new versions.
--
-- Costs: ADD COLUMN ... GENERATED rewrites collection_streams under an
-- ACCESS EXCLUSIVE lock (one row per stream: about a second per 500,000
-- streams; ingest and listings wait for it). The indexes are built
-- CONCURRENTLY and the old ones dropped CONCURRENTLY; until the new
-- binaries replace the old ones, old servers' GET /v1/changes scans
-- collection_streams. Every step converges when re-run after an
-- interruption.
ALTER TABLE records SET (vacuum_index_cleanup = on);
ALTER TABLE collection_streams SET (vacuum_index_cleanup = on, fillfactor = 70);

ALTER TABLE collection_streams ADD COLUMN IF NOT EXISTS changed_epoch bigint
    GENERATED ALWAYS AS (changed_xact >> 10) STORED;
COMMENT ON COLUMN collection_streams.changed_epoch IS
    'changed_xact / 1024, kept by PostgreSQL: what the listing indexes key instead of changed_xact, so that an update keeps its index entries (HOT) unless 1,024 transactions passed since the stream''s last write.';

DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_epoch_idx;
CREATE INDEX CONCURRENTLY collection_streams_changed_epoch_idx
    ON collection_streams (restaurant_id COLLATE "C", changed_epoch);
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_idx;
ALTER INDEX collection_streams_changed_epoch_idx RENAME TO collection_streams_changed_idx;
COMMENT ON INDEX collection_streams_changed_idx IS
    'Streams of a restaurant by epoch of their last writing transaction (changed_epoch): GET /v1/changes probes one range per granted restaurant (the streams changed since a position), never every stream. Keyed by the epoch, not changed_xact, so ingest''s updates stay HOT. restaurant_id under "C" so ingest''s lookups by (restaurant, collection) keep collection_streams_pkey.';

DROP INDEX CONCURRENTLY IF EXISTS collection_streams_epoch_idx;
CREATE INDEX CONCURRENTLY collection_streams_epoch_idx ON collection_streams (changed_epoch);
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_xact_idx;
ALTER INDEX collection_streams_epoch_idx RENAME TO collection_streams_xact_idx;
COMMENT ON INDEX collection_streams_xact_idx IS
    'Streams by epoch of their last writing transaction (changed_epoch), across restaurants: GET /v1/changes of a key with many restaurants (StreamsChangedSince) reads the streams written since its position in one range scan, and keeps those the key reads. Keyed by the epoch, not changed_xact, so ingest''s updates stay HOT.';

COMMENT ON TABLE records IS
    'Current state per record (received-shadow snapshot): upserted by ingest, only ever to a higher sequence. Walked by records_walk_idx. vacuum_index_cleanup = on: every update leaves a dead walk index entry, which every vacuum removes.';
COMMENT ON TABLE collection_streams IS
    'Per-stream sequence counters, row-locked by ingest; the lock serialises writers of one (restaurant, collection) and nothing else. The row with collection ''deliveries'' numbers the restaurant''s deliveries in receive order. Updated by every write, as heap-only tuples (no indexed column changes but once per 1,024 transactions; fillfactor 70 leaves room on the page).';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_xact_old_idx;
CREATE INDEX CONCURRENTLY collection_streams_xact_old_idx ON collection_streams (changed_xact);
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_xact_idx;
ALTER INDEX collection_streams_xact_old_idx RENAME TO collection_streams_xact_idx;
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_old_idx;
CREATE INDEX CONCURRENTLY collection_streams_changed_old_idx ON collection_streams (restaurant_id COLLATE "C", changed_xact);
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_idx;
ALTER INDEX collection_streams_changed_old_idx RENAME TO collection_streams_changed_idx;
ALTER TABLE collection_streams DROP COLUMN IF EXISTS changed_epoch;
ALTER TABLE collection_streams RESET (vacuum_index_cleanup, fillfactor);
ALTER TABLE records RESET (vacuum_index_cleanup);
