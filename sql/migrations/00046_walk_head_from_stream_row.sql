-- +goose Up
-- The walk statements now read a walk's head from the stream's row
-- (last_sequence, with max_record_bytes in the same probe) instead of a
-- backward probe of records_walk_idx, and the pages that could reach
-- their byte bound are read by the summed statements
-- (RecordWalkPageSummed, RecordWalkFirstPageSummed). Only the columns'
-- comments change.
COMMENT ON COLUMN collection_streams.last_sequence IS
    'The stream''s last position: ingest raises it in the transaction that writes the version at it, holding the row locked until it commits, and positions are gapless, so a snapshot sees every position up to it and none beyond. A walk''s first page pins here (the walk statements read it with max_record_bytes, one probe of collection_streams_pkey).';
COMMENT ON COLUMN collection_streams.max_record_bytes IS
    'Bytes of the largest record version (octet_length of its data as text) written to the stream, never lowered; NULL: unknown. The walk statements return a page without summing its bytes when its rows times this stay under the page''s byte bound, and otherwise a marker on which the service runs their summed statements.';

-- +goose Down
COMMENT ON COLUMN collection_streams.last_sequence IS NULL;
COMMENT ON COLUMN collection_streams.max_record_bytes IS
    'Bytes of the largest record version (octet_length of its data as text) written to the stream, never lowered; NULL: unknown. The walk statements skip their byte sum when the page''s rows times this stay under the page''s byte bound.';
