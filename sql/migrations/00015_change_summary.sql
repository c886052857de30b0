-- +goose NO TRANSACTION
-- +goose Up

-- Polling cost that follows change (README, "What changed, key-wide"):
--
-- 1. collection_streams.changed_xact: the transaction id (xid8, as a
--    bigint) of the last write to the stream, set by StreamNextSequence
--    under the stream's row lock. A listing keeps the snapshot it started
--    from (xmin, xmax and the transactions running between them) as the
--    position of the next one, which reports the streams last written by
--    a transaction that snapshot could not see: every change it missed is
--    one of those, however transactions interleave (a plain sequence would
--    not be commit-ordered; DESIGN section 3).
-- 2. Deliveries get a receive order: received_sequence, taken from the
--    restaurant's 'deliveries' row of collection_streams under the same
--    row lock as every stream, so it commits in order and a changes cursor
--    in receive order never skips a late upload. Existing deliveries are
--    numbered by received_at, then id.
--
-- Every step converges when re-run after an interruption; the indexes are
-- built CONCURRENTLY. A delivery written by an older binary while this
-- runs gets its number from a re-run (the UPDATE numbers only the rows
-- still without one, after the stream's last number).
ALTER TABLE collection_streams ADD COLUMN IF NOT EXISTS changed_xact bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN collection_streams.changed_xact IS
    'Transaction id (pg_current_xact_id, xid8 as bigint) of the last write to the stream; 0 for streams last written before migration 00015. GET /v1/changes reports the streams last written by a transaction the previous listing''s snapshot could not see.';
COMMENT ON TABLE collection_streams IS
    'Per-stream sequence counters, row-locked by ingest; the lock serialises writers of one (restaurant, collection) and nothing else. The row with collection ''deliveries'' numbers the restaurant''s deliveries in receive order.';

ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS received_sequence bigint;
COMMENT ON COLUMN deliveries.received_sequence IS
    'Position in the restaurant''s delivery stream (collection_streams, collection ''deliveries''), in receive order: what the delivery changes cursor pages by, whatever occurredAt says.';

UPDATE deliveries d
SET received_sequence = n.seq
FROM (SELECT u.restaurant_id, u.id,
             COALESCE((SELECT s.last_sequence FROM collection_streams s
                       WHERE s.restaurant_id = u.restaurant_id AND s.collection = 'deliveries'), 0)
             + row_number() OVER (PARTITION BY u.restaurant_id ORDER BY u.received_at, u.id) AS seq
      FROM deliveries u
      WHERE u.received_sequence IS NULL) n
WHERE d.restaurant_id = n.restaurant_id AND d.id = n.id;

INSERT INTO collection_streams (restaurant_id, collection, last_sequence)
SELECT restaurant_id, 'deliveries', max(received_sequence)
FROM deliveries
GROUP BY restaurant_id
ON CONFLICT (restaurant_id, collection) DO UPDATE
    SET last_sequence = GREATEST(collection_streams.last_sequence, excluded.last_sequence);

ALTER TABLE deliveries ALTER COLUMN received_sequence SET NOT NULL;

DROP INDEX CONCURRENTLY IF EXISTS deliveries_received_idx;
CREATE UNIQUE INDEX CONCURRENTLY deliveries_received_idx ON deliveries (restaurant_id COLLATE "C", received_sequence);
COMMENT ON INDEX deliveries_received_idx IS
    'Receive order within a restaurant: one range scan per page of the delivery changes cursor. restaurant_id under "C", like deliveries_list_idx, so lookups by id keep deliveries_pkey.';

DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_idx;
CREATE INDEX CONCURRENTLY collection_streams_changed_idx ON collection_streams (restaurant_id COLLATE "C", changed_xact);
COMMENT ON INDEX collection_streams_changed_idx IS
    'Streams of a restaurant by last writing transaction: GET /v1/changes probes one range per granted restaurant (the streams changed since a position), never every stream. restaurant_id under "C" so ingest''s lookups by (restaurant, collection) keep collection_streams_pkey.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_changed_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_received_idx;
ALTER TABLE deliveries DROP COLUMN IF EXISTS received_sequence;
DELETE FROM collection_streams WHERE collection = 'deliveries';
ALTER TABLE collection_streams DROP COLUMN IF EXISTS changed_xact;
