-- Advisory locks of the maintenance jobs: one process at a time runs each
-- job (store.WithJobLock). Session-level, so released when the holding
-- connection ends, whatever happens to the process.

-- name: JobLockTry :one
-- Takes the job's lock if free; false when another session holds it.
SELECT pg_try_advisory_lock(sqlc.arg(lock_key)::bigint);

-- name: JobLockRelease :one
-- Releases the job's lock taken by JobLockTry on this session.
SELECT pg_advisory_unlock(sqlc.arg(lock_key)::bigint);
