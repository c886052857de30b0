-- name: AuditInsert :copyfrom
-- Serves the audit writer: batches of events through COPY.
INSERT INTO audit_events (occurred_at, key_public_id, restaurant_id, method, route, status, request_id, client_ip, outcome)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: AuditRecent :many
-- Serves `foodsafe audit` without filters. audit_events_occurred_idx.
SELECT id, occurred_at, key_public_id, restaurant_id, method, route, status, request_id, client_ip, outcome
FROM audit_events
WHERE occurred_at >= sqlc.arg(since)
ORDER BY occurred_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: AuditRecentByKey :many
-- Serves `foodsafe audit --key` (optionally with --restaurant).
-- audit_events_key_idx.
SELECT id, occurred_at, key_public_id, restaurant_id, method, route, status, request_id, client_ip, outcome
FROM audit_events
WHERE key_public_id = sqlc.arg(key_public_id)
  AND occurred_at >= sqlc.arg(since)
  AND (sqlc.narg(restaurant_id)::text IS NULL OR restaurant_id = sqlc.narg(restaurant_id))
ORDER BY occurred_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: AuditRecentByRestaurant :many
-- Serves `foodsafe audit --restaurant`. audit_events_restaurant_idx.
SELECT id, occurred_at, key_public_id, restaurant_id, method, route, status, request_id, client_ip, outcome
FROM audit_events
WHERE restaurant_id = sqlc.arg(restaurant_id)
  AND occurred_at >= sqlc.arg(since)
ORDER BY occurred_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: AuditPartitionCreate :one
-- Serves the audit writer (a batch with no partition for its day) and the
-- partition job (days ahead): true when it created the day's partition.
SELECT foodsafe_audit_partition_create(sqlc.arg(day)::date);

-- name: AuditPartitionsEndingBy :many
-- Serves audit retention: the partitions holding only events older than
-- horizon, oldest first. Reads the catalogue, not the table.
SELECT b.partition::text AS partition
FROM foodsafe_audit_partition_bounds() AS b (partition, upper_bound)
WHERE b.upper_bound <= sqlc.arg(horizon)::timestamptz
ORDER BY b.upper_bound;

-- name: AuditPartitionDrop :exec
-- Serves audit retention: drops one whole partition (O(1), no DELETE).
SELECT foodsafe_audit_partition_drop(sqlc.arg(partition)::text);

-- name: AuditBeforePartitioningBound :many
-- Serves audit retention: the end (exclusive) of the partition holding the
-- rows written before partitioning (audit_events_before_YYYYMMDD, attached
-- by migration 00009), none once it is dropped. Reads the catalogue.
SELECT b.upper_bound::timestamptz AS upper_bound
FROM foodsafe_audit_partition_bounds() AS b (partition, upper_bound)
WHERE b.partition LIKE 'audit\_events\_before\_%';

-- name: AuditEventsDeleteOldest :execrows
-- Serves audit retention in the partition written before partitioning,
-- which covers years and cannot be dropped a day at a time: deletes one
-- batch of the oldest events before horizon (the caller keeps horizon
-- within that partition). audit_events_occurred_idx of the partition.
DELETE FROM audit_events
WHERE (id, occurred_at) IN (
    SELECT e.id, e.occurred_at FROM audit_events AS e
    WHERE e.occurred_at < sqlc.arg(horizon)::timestamptz
    ORDER BY e.occurred_at, e.id
    LIMIT sqlc.arg(max_rows));
