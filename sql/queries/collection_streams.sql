-- name: StreamNextSequence :one
-- Serves ingest: takes the next position of the (restaurant, collection)
-- stream. The row stays locked until the transaction ends, which
-- serialises writers of this stream so commit order equals sequence order.
-- collection_streams_pkey.
INSERT INTO collection_streams (restaurant_id, collection, last_sequence)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(collection), 1)
ON CONFLICT (restaurant_id, collection) DO UPDATE
    SET last_sequence = collection_streams.last_sequence + 1
RETURNING last_sequence;
