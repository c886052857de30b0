-- +goose NO TRANSACTION
-- +goose Up

-- A walk page pinned at P reads, for each record changed since P, the one
-- version that was current at P (RecordWalkPage, branch 2): the newest
-- superseded, uncompacted version of the record at or below P, one
-- backward probe of this index per record changed. Before, the page read
-- every version superseded after P from record_changes_superseded_idx and
-- filtered out all but those at or below P: a page pinned behind 20,000
-- updates of 100 records read 20,000 index entries and heap rows for 100
-- results (docs/dbas.md, "Cost of a walk page").
--
-- restaurant_id is compared under "C", like records_walk_idx (00006):
-- only statements that say `restaurant_id = $1 COLLATE "C"` can take it,
-- so a lookup by mutation id (record_changes_pkey) is never planned on it,
-- with or without statistics. Partial on superseded, uncompacted versions
-- (the current version of a record is never what a pin needs: it is read
-- from records; compacted versions are past every cursor's lifetime), so
-- it follows the versions superseded within the compaction window, not
-- the whole history. The predicate says `superseded_by > sequence`, which
-- the CHECK record_changes_superseded_later makes the same rows as
-- `superseded_by IS NOT NULL`, so that only a statement stating it can
-- take the index: the walk's read of the versions superseded after a pin
-- (record_changes_superseded_idx, whose predicate a `superseded_by > P`
-- implies) is never planned on it; on small tables, it was.
--
-- record_changes_superseded_idx stays: while few versions were written
-- per record changed since the pin, reading them all from it costs less
-- than a probe per record (RecordWalkPage chooses).
--
-- Built CONCURRENTLY (ingest writes record_changes all the time); every
-- step converges when re-run after an interruption.
DROP INDEX CONCURRENTLY IF EXISTS record_changes_at_pin_idx;
CREATE INDEX CONCURRENTLY record_changes_at_pin_idx
    ON record_changes (restaurant_id COLLATE "C", collection, record_id, sequence)
    WHERE superseded_by > sequence AND compacted_at IS NULL;
COMMENT ON INDEX record_changes_at_pin_idx IS
    'Superseded, uncompacted versions by record and sequence: a walk page pinned at P probes it once per record changed since P for the version current at P (RecordWalkPage). restaurant_id under "C" and the predicate superseded_by > sequence so only the walk''s probe (which says both) can take it.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS record_changes_at_pin_idx;
