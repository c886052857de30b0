-- +goose Up
-- The walk statements now read a walk's head from the stream's row
-- (last_sequence, with max_record_bytes in the same probe) instead of a
-- backward probe of records_walk_idx, and a page that could reach its
-- byte bound is declined by them and read by the summed statements
-- (RecordWalkPageSummed, RecordWalkFirstPageSummed), a second round trip.
-- A stream whose largest record is unknown (NULL: created by a binary
-- older than 00042 while it ran, during a rolling deploy) would pay it on
-- every page, as ingest never raises an unknown size: those streams are
-- measured here, as 00042 measured every stream.
--
-- The comments first: COMMENT ON takes a SHARE UPDATE EXCLUSIVE lock on
-- the table, which may wait behind a VACUUM of it, and should not do so
-- while this transaction holds stream rows that ingest waits for.
COMMENT ON COLUMN collection_streams.last_sequence IS
    'The stream''s last position: ingest raises it in the transaction that writes the version at it, holding the row locked until it commits, and positions are gapless, so a snapshot sees every position up to it and none beyond. A walk''s first page pins here (the walk statements read it with max_record_bytes, one probe of collection_streams_pkey).';
COMMENT ON COLUMN collection_streams.max_record_bytes IS
    'Bytes of the largest record version (octet_length of its data as text) written to the stream, never lowered; NULL: unknown. The walk statements return a page without summing its bytes when its rows times this stay under the page''s byte bound, and otherwise a marker on which the service runs their summed statements.';

-- The unknown streams' rows are locked first, in one order: this waits
-- for any ingest in flight into them (which holds the row from
-- StreamNextSequence to its commit, and leaves an unknown size as it is)
-- and makes later ingest wait, so that the measure below, a statement of
-- its own with a snapshot taken after those commits, counts every
-- version written before it and none can be written beside it. (Measured
-- in the locking statement, a version committed while it waited would be
-- missed: its snapshot predates the wait.) One scan of collection_streams
-- (no index holds the NULLs); nothing else is read or written when there
-- are none.
SELECT 1 FROM collection_streams
WHERE max_record_bytes IS NULL
ORDER BY restaurant_id, collection
FOR UPDATE;

-- Each from its own restaurant's versions (record_changes is keyed by
-- restaurant first), 0 for a stream with none.
UPDATE collection_streams s
SET max_record_bytes = COALESCE((SELECT max(octet_length(c.data::text)) FROM record_changes c
                                 WHERE c.restaurant_id = s.restaurant_id AND c.collection = s.collection), 0)
WHERE s.max_record_bytes IS NULL;

-- +goose Down
-- The sizes measured stay: they are right for every release.
COMMENT ON COLUMN collection_streams.last_sequence IS NULL;
COMMENT ON COLUMN collection_streams.max_record_bytes IS
    'Bytes of the largest record version (octet_length of its data as text) written to the stream, never lowered; NULL: unknown. The walk statements skip their byte sum when the page''s rows times this stay under the page''s byte bound.';
