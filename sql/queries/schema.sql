-- name: SchemaVersion :one
-- Serves /health/version. goose_db_version is tiny (one row per migration),
-- so a sequential scan is the right plan; no index needed.
SELECT COALESCE(max(version_id), 0)::bigint AS version
FROM goose_db_version
WHERE is_applied;

-- name: CitusInstalled :one
-- Serves the store's choice of ingest statements, once per process.
-- pg_extension is tiny; a catalogue lookup.
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') AS installed;
