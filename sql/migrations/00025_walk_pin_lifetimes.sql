-- +goose NO TRANSACTION
-- +goose Up

-- A walk page pinned at P returns, beside the current versions in its
-- range, the versions that were current at P and have been superseded
-- since (RecordWalkPage, branch 2): the versions of its stream with
--
--     sequence in (after, B]   (they fall in the page)
--     superseded_by > P        (they were still current at P).
--
-- Each version is a point (sequence, superseded_by) and the page asks for
-- the points in one rectangle. A B-tree keys one of the two: by
-- superseded_by (record_changes_superseded_idx) a page reads every
-- version superseded after P, 20,000 for 20,000 updates of 100 records;
-- by record and sequence (record_changes_at_pin_idx, 00022) it probes
-- once per record changed since P, 100 descents there, although a page
-- of 50 holds at most a few of those records. This GiST index keys both:
-- a page reads the versions in its rectangle and the few tree pages
-- around them, whatever was written since the pin (docs/dbas.md, "Cost
-- of a walk page"). It replaces both B-trees, which nothing else reads,
-- so ingest still writes one index entry per superseded version.
--
-- btree_gist (a contrib extension shipped with PostgreSQL; trusted, so the
-- owner of the database may create it) lets the GiST index start with the
-- stream's columns. Sequences are exact as float8 coordinates below 2^53.
-- Partial like the indexes it replaces: only superseded, uncompacted
-- versions (a current version is read from records; compacted ones are
-- past every cursor's lifetime).
--
-- Built CONCURRENTLY (ingest writes record_changes all the time); until
-- the new binaries run, old servers' pinned pages read the two B-trees,
-- which are dropped last. Every step converges when re-run after an
-- interruption.
CREATE EXTENSION IF NOT EXISTS btree_gist;

DROP INDEX CONCURRENTLY IF EXISTS record_changes_lifetime_idx;
CREATE INDEX CONCURRENTLY record_changes_lifetime_idx
    ON record_changes USING gist (restaurant_id, collection, point(sequence, superseded_by))
    WHERE superseded_by IS NOT NULL AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_lifetime_idx IS
    'Superseded, uncompacted versions of a stream as points (sequence, superseded_by): a walk page pinned at P reads the rectangle sequence in its range, superseded_by after P, which are the versions current at P that it returns (RecordWalkPage). GiST over btree_gist for the stream columns.';

DROP INDEX CONCURRENTLY IF EXISTS record_changes_at_pin_idx;
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_idx;

-- +goose Down
-- The extension stays: other objects of the database may use it.
DROP INDEX CONCURRENTLY IF EXISTS record_changes_superseded_idx;
CREATE INDEX CONCURRENTLY record_changes_superseded_idx ON record_changes (restaurant_id, collection, superseded_by)
    WHERE superseded_by IS NOT NULL AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_superseded_idx IS
    'Versions superseded and not compacted, by stream and superseded_by: walk pages read the range superseded after their pin.';
DROP INDEX CONCURRENTLY IF EXISTS record_changes_at_pin_idx;
CREATE INDEX CONCURRENTLY record_changes_at_pin_idx
    ON record_changes (restaurant_id COLLATE "C", collection, record_id, sequence)
    WHERE superseded_by > sequence AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_at_pin_idx IS
    'Superseded, uncompacted versions by record and sequence: a walk page pinned at P probes it once per record changed since P for the version current at P (RecordWalkPage). restaurant_id under "C" and the predicate superseded_by > sequence so only the walk''s probe (which says both) can take it.';
DROP INDEX CONCURRENTLY IF EXISTS record_changes_lifetime_idx;
