-- name: DeliveryInsert :one
-- Serves PUT /v1/ingest/.../deliveries/{id}, after StreamNextSequence took
-- the restaurant's next 'deliveries' position in the same transaction.
-- Returns no row when the id exists already; the caller then rolls back
-- (the position with it) and compares contents (replay or conflict).
-- deliveries_pkey.
INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
                        temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count,
                        content_sha256, received_sequence)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(id), sqlc.arg(occurred_at), sqlc.arg(is_compliant),
        sqlc.arg(supplier_id), sqlc.arg(supplier_name), sqlc.arg(temperature_records),
        sqlc.arg(non_compliance_reasons), sqlc.arg(corrective_actions), sqlc.narg(commentary), sqlc.arg(image_count),
        sqlc.arg(content_sha256), sqlc.arg(received_sequence))
ON CONFLICT (restaurant_id, id) DO NOTHING
RETURNING restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
          temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_at,
          received_sequence;

-- name: DeliveryGet :one
-- Serves GET .../deliveries/{deliveryId}. deliveries_pkey, the only index
-- this clause can use (deliveries_list_idx compares restaurant_id under
-- "C", which it does not name), with or without statistics.
SELECT restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
       temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_at,
       received_sequence
FROM deliveries
WHERE restaurant_id = sqlc.arg(restaurant_id) AND id = sqlc.arg(id);

-- name: DeliveryListFirst :many
-- Serves the first page of GET .../deliveries?from&to: newest first.
-- deliveries_list_idx: one range scan over [from, to], stopped by LIMIT.
-- restaurant_id is compared under "C", the index's collation for it
-- (migration 00006), which also keeps lookups by id off this index.
SELECT restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
       temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_at,
       received_sequence
FROM deliveries
WHERE restaurant_id = sqlc.arg(restaurant_id) COLLATE "C"
  AND occurred_at >= sqlc.arg(from_ms)
  AND occurred_at <= sqlc.arg(to_ms)
ORDER BY occurred_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: DeliveryListAfter :many
-- Serves the following pages: rows strictly after the cursor position
-- (occurred_at, id) in descending order, down to from. deliveries_list_idx:
-- the row comparison is an index condition, so the scan starts at the
-- cursor instead of skipping earlier rows. The upper bound
-- occurred_at <= after_occurred_at always holds (the row comparison implies
-- it) but is stated: on a never-analyzed table a two-sided range is
-- estimated narrow and read in index order, where the lower bound and the
-- row comparison alone were planned as a bitmap scan and a Sort.
SELECT restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
       temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_at,
       received_sequence
FROM deliveries
WHERE restaurant_id = sqlc.arg(restaurant_id) COLLATE "C"
  AND occurred_at >= sqlc.arg(from_ms)
  AND occurred_at <= sqlc.arg(after_occurred_at)::bigint
  AND (occurred_at, id) < (sqlc.arg(after_occurred_at)::bigint, sqlc.arg(after_id)::text)
ORDER BY occurred_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: DeliveryChangesPage :many
-- Serves GET .../delivery-changes: the deliveries received after a
-- position of the restaurant's delivery stream, in receive order, whatever
-- their occurredAt. Positions are taken under the stream's row lock
-- (StreamNextSequence), so they commit in order: a page that returned
-- position N has seen every delivery below N. deliveries_received_idx: one
-- range scan stopped by LIMIT (restaurant_id under "C", as the index
-- compares it). GET /v1/records reads a restaurant's deliveries stream
-- with it, in a pipeline of several streams (db.FeedReads).
SELECT restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name,
       temperature_records, non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_at,
       received_sequence
FROM deliveries
WHERE restaurant_id = sqlc.arg(restaurant_id) COLLATE "C"
  AND received_sequence > sqlc.arg(after_sequence)
ORDER BY received_sequence
LIMIT sqlc.arg(max_rows);
