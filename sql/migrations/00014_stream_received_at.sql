-- +goose Up

-- receivedAt never decreases as sequence grows within a stream (README,
-- "receivedAt"): ingest assigns it under the stream's row lock as the
-- greatest of the receive time, capturedAt and the stream's last
-- receivedAt, which this column keeps beside the stream's position.
ALTER TABLE collection_streams ADD COLUMN last_received_at bigint NOT NULL DEFAULT 0;

-- Existing streams start from the latest receivedAt they hold.
UPDATE collection_streams s
SET last_received_at = c.last_received_at
FROM (SELECT restaurant_id, collection, max(received_at) AS last_received_at
      FROM record_changes
      GROUP BY restaurant_id, collection) c
WHERE s.restaurant_id = c.restaurant_id AND s.collection = c.collection;

COMMENT ON COLUMN collection_streams.last_received_at IS
    'receivedAt (epoch ms) of the change at last_sequence; the floor of the next change''s receivedAt, so receivedAt never decreases along the stream.';

-- +goose Down
ALTER TABLE collection_streams DROP COLUMN last_received_at;
