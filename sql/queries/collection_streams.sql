-- name: StreamNextSequence :one
-- Serves ingest: takes the next position of the (restaurant, collection)
-- stream and the receivedAt of the change at it: the greatest of the
-- caller's received_at (its clock, raised to capturedAt) and the stream's
-- last receivedAt, so receivedAt never decreases as sequence grows, however
-- writers race for the lock or a device clock runs ahead. The row stays
-- locked until the transaction ends, which serialises writers of this
-- stream so commit order equals sequence order. changed_xact records the
-- writing transaction for GET /v1/changes (StreamsChanged), and
-- PostgreSQL its epoch (changed_epoch, a generated column); no indexed
-- column changes but that epoch, once per 1,024 transactions, so the update
-- is HOT. On Citus the function is evaluated on the coordinator, like
-- every non-immutable function of a modification. A new stream has no
-- record yet, so its largest record is 0 bytes (max_record_bytes, which
-- the statement applying the change raises). collection_streams_pkey.
INSERT INTO collection_streams (restaurant_id, collection, last_sequence, last_received_at, changed_xact, max_record_bytes)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(collection), 1, sqlc.arg(received_at), pg_current_xact_id()::text::bigint, 0)
ON CONFLICT (restaurant_id, collection) DO UPDATE
    SET last_sequence    = collection_streams.last_sequence + 1,
        last_received_at = greatest(collection_streams.last_received_at, excluded.last_received_at),
        changed_xact     = excluded.changed_xact
RETURNING last_sequence, last_received_at;

-- name: StreamsHorizon :one
-- Serves GET /v1/changes: where a listing stands, as the snapshot of this
-- statement: xmin (the oldest transaction still running), xmax (the next
-- transaction id) and xip (those running between them). A change by a
-- transaction below xmax and not in xip was committed, so any later
-- statement sees it; any change a later statement cannot see yet carries
-- a changed_xact at or above xmax or in xip. The next listing from this
-- snapshot (StreamsChanged) reports exactly those, so it misses nothing,
-- and a write that was in flight makes it repeat a stream, never skip
-- one. Taken before the listing's reads, it can only lag behind them. A
-- position beyond xmax was issued by another database (a restore). No
-- table is read; on Citus it runs on the coordinator, whose transaction
-- ids StreamNextSequence records.
SELECT pg_snapshot_xmin(s)::text::bigint AS xmin,
       pg_snapshot_xmax(s)::text::bigint AS xmax,
       ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(s) AS x)::bigint[] AS xip
FROM pg_current_snapshot() AS s;

-- name: StreamsChanged :many
-- Serves GET /v1/changes: the streams, among the given ones of the given
-- restaurants, last written by a transaction the snapshot (xmin, xmax,
-- xip) of the previous listing could not see (at or above xmax, or in
-- xip), with their heads, in (restaurant, stream) order after a keyset
-- position. collection_streams_changed_idx: one range probe per
-- restaurant of the array (changed_epoch >= xmin >> 10, the epoch of 1,024
-- transactions holding xmin; restaurant_id under "C", as the index
-- compares it), which reads only the streams written since the previous
-- listing's oldest running transaction or in the 1,023 before it; the rest
-- of the predicate (changed_xact itself) is checked on those rows, and
-- the Sort orders only them. The index keys the epoch, not changed_xact,
-- so that ingest's updates of the stream row stay HOT (migration 00023).
-- On Citus the array prunes to the restaurants' shards: a fan-out bounded
-- by the restaurants granted (and the shard count), never every shard.
-- GET /v1/records runs it from the zero snapshot (every stream that holds
-- data) after the feed's position, for at most the items its page may
-- still take: the streams the feed reads next.
SELECT s.restaurant_id::text AS restaurant_id, s.collection::text AS stream, s.last_sequence AS head
FROM collection_streams s
WHERE s.restaurant_id COLLATE "C" = ANY(sqlc.arg(restaurant_ids)::text[])
  AND s.changed_epoch >= (sqlc.arg(xmin)::bigint >> 10)
  AND s.changed_xact >= sqlc.arg(xmin)::bigint
  AND (s.changed_xact >= sqlc.arg(xmax)::bigint OR s.changed_xact = ANY(sqlc.arg(xip)::bigint[]))
  AND s.collection = ANY(sqlc.arg(streams)::text[])
  AND (s.restaurant_id COLLATE "C", s.collection COLLATE "C") > (sqlc.arg(after_restaurant)::text COLLATE "C", sqlc.arg(after_stream)::text COLLATE "C")
ORDER BY s.restaurant_id COLLATE "C", s.collection COLLATE "C"
LIMIT sqlc.arg(max_rows);

-- name: StreamsChangedSince :many
-- Serves GET /v1/changes for a key of many restaurants: the streams of
-- every restaurant last written by a transaction the snapshot (xmin,
-- xmax, xip) could not see, oldest epoch first, at most max_rows; the
-- caller keeps those its key reads. collection_streams_xact_idx: one
-- range scan from xmin's epoch (changed_epoch >= xmin >> 10), which reads
-- only the streams written since the previous listing's oldest running
-- transaction, whoever's they are, or in the 1,023 transactions before it
-- (checked on changed_xact and dropped before the LIMIT).
-- Cheaper than StreamsChanged's probe per restaurant while fewer streams
-- changed service-wide than the key has restaurants; the caller passes
-- that bound as max_rows and probes per restaurant beyond it. On Citus it
-- runs on every shard (each stops at max_rows).
SELECT s.restaurant_id::text AS restaurant_id, s.collection::text AS stream, s.last_sequence AS head
FROM collection_streams s
WHERE s.changed_epoch >= (sqlc.arg(xmin)::bigint >> 10)
  AND s.changed_xact >= sqlc.arg(xmin)::bigint
  AND (s.changed_xact >= sqlc.arg(xmax)::bigint OR s.changed_xact = ANY(sqlc.arg(xip)::bigint[]))
ORDER BY s.changed_epoch
LIMIT sqlc.arg(max_rows);

-- name: StreamHead :one
-- Serves the delivery changes cursor: the stream's last position (0 when
-- nothing was ever written), to tell an empty page from a position the
-- stream has not reached. collection_streams_pkey.
SELECT COALESCE((SELECT s.last_sequence FROM collection_streams s
                 WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)), 0)::bigint AS head;

-- name: StreamPositionsSeen :many
-- Serves GET /v1/records?since=: for each given stream (restaurant_ids[i],
-- streams[i]; a collection, or 'deliveries'), the highest position among
-- its rows that the snapshot (xmin, xmax, xip) could see (0 when it saw
-- none): what a feed of the changes since the snapshot reads the stream
-- after. Writers of one stream are serialised by its collection_streams
-- row, so the rows the snapshot could not see are the stream's last ones:
-- each probe walks records_walk_idx (restaurant_id under "C", as it
-- compares it) or deliveries_received_idx backwards from the stream's end
-- and stops at the first row the snapshot saw, reading the rows written
-- since and one more. The caller passes only streams GET /v1/changes
-- lists as written since the snapshot, at most a page's worth.
SELECT s.restaurant_id::text AS restaurant_id, s.stream::text AS stream,
       COALESCE(CASE WHEN s.stream = 'deliveries' THEN
                    (SELECT d.received_sequence FROM deliveries d
                     WHERE d.restaurant_id COLLATE "C" = s.restaurant_id
                       AND NOT (d.changed_xact >= sqlc.arg(xmin)::bigint
                                AND (d.changed_xact >= sqlc.arg(xmax)::bigint OR d.changed_xact = ANY(sqlc.arg(xip)::bigint[])))
                     ORDER BY d.restaurant_id COLLATE "C" DESC, d.received_sequence DESC
                     LIMIT 1)
                ELSE
                    (SELECT r.sequence FROM records r
                     WHERE r.restaurant_id = s.restaurant_id COLLATE "C" AND r.collection = s.stream
                       AND NOT (r.changed_xact >= sqlc.arg(xmin)::bigint
                                AND (r.changed_xact >= sqlc.arg(xmax)::bigint OR r.changed_xact = ANY(sqlc.arg(xip)::bigint[])))
                     ORDER BY r.sequence DESC
                     LIMIT 1)
                END, 0)::bigint AS seen
FROM (SELECT (sqlc.arg(restaurant_ids)::text[])[i] AS restaurant_id, (sqlc.arg(streams)::text[])[i] AS stream
      FROM generate_subscripts(sqlc.arg(restaurant_ids)::text[], 1) AS i) AS s;
