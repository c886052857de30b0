-- name: StreamNextSequence :one
-- Serves ingest: takes the next position of the (restaurant, collection)
-- stream and the receivedAt of the change at it: the greatest of the
-- caller's received_at (its clock, raised to capturedAt) and the stream's
-- last receivedAt, so receivedAt never decreases as sequence grows, however
-- writers race for the lock or a device clock runs ahead. The row stays
-- locked until the transaction ends, which serialises writers of this
-- stream so commit order equals sequence order. collection_streams_pkey.
INSERT INTO collection_streams (restaurant_id, collection, last_sequence, last_received_at)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(collection), 1, sqlc.arg(received_at))
ON CONFLICT (restaurant_id, collection) DO UPDATE
    SET last_sequence    = collection_streams.last_sequence + 1,
        last_received_at = greatest(collection_streams.last_received_at, excluded.last_received_at)
RETURNING last_sequence, last_received_at;
