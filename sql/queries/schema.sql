-- name: SchemaVersion :one
-- Serves /health/version. goose_db_version is tiny (one row per migration),
-- so a sequential scan is the right plan; no index needed.
SELECT COALESCE(max(version_id), 0)::bigint AS version
FROM goose_db_version
WHERE is_applied;
