-- name: RecordChangeByMutation :one
-- Serves idempotent replays: the change a mutation id produced, if any.
-- record_changes_pkey.
SELECT restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
       received_at, source_version, payload_version, request_sha256, superseded_by
FROM record_changes
WHERE restaurant_id = sqlc.arg(restaurant_id) AND mutation_id = sqlc.arg(mutation_id);
