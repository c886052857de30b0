-- +goose Up

-- Every current record (records) and every delivery carries the
-- transaction that wrote it, changed_xact, as collection_streams does for
-- its stream: GET /v1/records?since= (a feed of what changed since a
-- GET /v1/changes position) reads, of each stream written since the
-- position, only what was written since. Inside a stream, writers are
-- serialised by the stream row's lock, so the rows a snapshot could not
-- see are the stream's last ones by sequence; the feed finds where they
-- begin with one backward probe of records_walk_idx (or
-- deliveries_received_idx) that reads those rows and one more
-- (StreamPositionsSeen).
--
-- Rows written before this migration carry the migration's own
-- transaction (the column is added with that constant as its default,
-- which PostgreSQL stores once in the catalog: no table rewrite, only a
-- brief ACCESS EXCLUSIVE lock). A position taken before the migration
-- cannot see that transaction, so a feed from it brings such streams
-- whole: more than changed, never less. Later rows take their writer from
-- the default (an insert) or from the upsert (RecordApplyChange,
-- RecordUpsertCurrent). Not indexed: a record's update already moves it
-- in records_walk_idx, and the probe reads the column from the rows it
-- visits. Re-running converges.
-- +goose StatementBegin
DO $$
DECLARE
    writer bigint := pg_current_xact_id()::text::bigint;
BEGIN
    EXECUTE format('ALTER TABLE records ADD COLUMN IF NOT EXISTS changed_xact bigint NOT NULL DEFAULT %s', writer);
    EXECUTE format('ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS changed_xact bigint NOT NULL DEFAULT %s', writer);
    -- On Citus the rows are written on the workers, whose transactions no
    -- listing's position names: the feed of what changed is not offered
    -- there (store.ErrSinceUnsupported), and the column keeps its constant.
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER TABLE records ALTER COLUMN changed_xact SET DEFAULT pg_current_xact_id()::text::bigint;
        ALTER TABLE deliveries ALTER COLUMN changed_xact SET DEFAULT pg_current_xact_id()::text::bigint;
    END IF;
END
$$;
-- +goose StatementEnd

-- What the block above added, as a schema reader sees it (no-ops here).
ALTER TABLE records ADD COLUMN IF NOT EXISTS changed_xact bigint NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS changed_xact bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN records.changed_xact IS
    'The transaction that wrote this version (pg_current_xact_id), or, for a row older than migration 00038, that migration''s. GET /v1/records?since= reads a stream''s rows that a position could not see (StreamPositionsSeen).';
COMMENT ON COLUMN deliveries.changed_xact IS
    'The transaction that received this delivery (pg_current_xact_id), or, for one older than migration 00038, that migration''s. GET /v1/records?since= reads the deliveries that a position could not see (StreamPositionsSeen).';

-- +goose Down
ALTER TABLE records DROP COLUMN IF EXISTS changed_xact;
ALTER TABLE deliveries DROP COLUMN IF EXISTS changed_xact;
