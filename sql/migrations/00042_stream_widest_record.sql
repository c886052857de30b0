-- +goose Up

-- The walk statements (RecordWalkPage, RecordWalkFirstPage) bound a page
-- by bytes with a running sum over its rows (a window aggregate), which
-- cost a page of small records about a fifth of its rate. A stream now
-- keeps the size of its largest record version: when the page's rows
-- times that size stay under the page's byte bound, no page of the
-- stream can reach it, and the statements take their branch without the
-- sum. Ingest raises it in the transaction that writes a version
-- (RecordApplyChange; StreamWidestRecordRaise on Citus), so a walk's
-- statement reads it in the same snapshot as the rows it bounds.
--
-- NULL is unknown: the statements then sum, as before. A stream created
-- by a binary before this migration's (during a rolling deploy) starts
-- NULL, as there is no default; one created by a later binary starts at 0
-- (StreamNextSequence). A version written by an older binary after the
-- backfill below does not raise it; the service's own cut of the page
-- (internal/store/internal/pgrows, walkCut) still bounds what it holds.
ALTER TABLE collection_streams ADD COLUMN max_record_bytes bigint;

-- Existing streams: their largest version (a compacted one has no data,
-- and no walk reads it), 0 for a stream with none; one scan of
-- record_changes, as 00014, and each stream row rewritten once (the LEFT
-- JOIN keeps the streams without versions). Ingest waits for the stream
-- rows this updates until the migration commits.
UPDATE collection_streams s
SET max_record_bytes = COALESCE(c.max_record_bytes, 0)
FROM (SELECT cs.restaurant_id, cs.collection, max(octet_length(rc.data::text)) AS max_record_bytes
      FROM collection_streams cs
      LEFT JOIN record_changes rc ON rc.restaurant_id = cs.restaurant_id AND rc.collection = cs.collection
      GROUP BY cs.restaurant_id, cs.collection) c
WHERE s.restaurant_id = c.restaurant_id AND s.collection = c.collection;

COMMENT ON COLUMN collection_streams.max_record_bytes IS
    'Bytes of the largest record version (octet_length of its data as text) written to the stream, never lowered; NULL: unknown. The walk statements skip their byte sum when the page''s rows times this stay under the page''s byte bound.';

-- +goose Down
ALTER TABLE collection_streams DROP COLUMN max_record_bytes;
