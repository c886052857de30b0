-- name: RecordChangeByMutation :one
-- Serves idempotent replays: the change a mutation id produced, if any
-- (compacted or not). record_changes_pkey.
SELECT restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
       received_at, source_version, payload_version, request_sha256, superseded_by, superseded_at,
       compacted_at
FROM record_changes
WHERE restaurant_id = sqlc.arg(restaurant_id) AND mutation_id = sqlc.arg(mutation_id);

-- name: RecordChangesByMutations :many
-- Serves batch ingest: RecordChangeByMutation for many mutation ids of one
-- restaurant in one statement, the replay check of every snapshot of a
-- batch in one round trip. An id with no change returns no row.
-- record_changes_pkey (one probe per id).
SELECT restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
       received_at, source_version, payload_version, request_sha256, superseded_by, superseded_at,
       compacted_at
FROM record_changes
WHERE restaurant_id = sqlc.arg(restaurant_id) AND mutation_id = ANY (sqlc.arg(mutation_ids)::text[]);

-- The compaction job (RecordChangesCompact) works one restaurant at a
-- time, in batches of max_rows, so each statement runs on one shard on
-- Citus, holds its row locks for one batch only and never blocks ingest:
-- rows an ingest holds are skipped (SKIP LOCKED) and taken by a later run.
-- Their clauses name superseded_at, never superseded_by with compacted_at,
-- so they match only the job's indexes (migrations 00008 and 00040). The
-- job finds the restaurants it has work in first (RecordChangesCompactionDue,
-- RecordChangesUnstampedRestaurants: read-only, across shards), so a run
-- costs statements in proportion to its work, not to the restaurants.

-- name: RecordChangesCompactionDue :many
-- Serves the compaction job: the next max_rows versions due (superseded
-- before horizon, not yet compacted) after (after_at, after_restaurant),
-- in order of supersession, so the job visits only the restaurants that
-- have work; a run with nothing due costs this one statement, however
-- many restaurants there are. Rows of a restaurant the job has compacted
-- since are gone from the range; the position moves past those it
-- skipped. record_changes_compaction_due_idx (a range, in index order).
SELECT h.restaurant_id, h.superseded_at::bigint AS superseded_at
FROM record_changes h
WHERE h.superseded_by IS NOT NULL AND h.superseded_at IS NOT NULL AND h.compacted_at IS NULL
  AND h.superseded_at < sqlc.arg(horizon)::bigint
  AND (h.superseded_at, h.restaurant_id) > (sqlc.arg(after_at)::bigint, sqlc.arg(after_restaurant)::text)
ORDER BY h.superseded_at, h.restaurant_id
LIMIT sqlc.arg(max_rows);

-- name: RecordChangesUnstampedRestaurants :many
-- Serves the compaction job: the next max_rows restaurants after `after`
-- that hold versions superseded without superseded_at, in id order (an
-- empty index once every such version is stamped: one statement).
-- record_changes_unstamped_idx (in index order).
SELECT DISTINCT u.restaurant_id
FROM record_changes u
WHERE u.superseded_by IS NOT NULL AND u.superseded_at IS NULL
  AND u.restaurant_id > sqlc.arg(after)::text
ORDER BY u.restaurant_id
LIMIT sqlc.arg(max_rows);

-- name: RecordChangesStampSuperseded :execrows
-- Gives up to max_rows versions superseded without superseded_at (before
-- migration 00008) the time the job first sees them: later than the
-- truth, so they are compacted late, never early.
-- record_changes_unstamped_idx, record_changes_pkey.
UPDATE record_changes c
SET superseded_at = sqlc.arg(now)::bigint
WHERE c.restaurant_id = sqlc.arg(restaurant_id)
  AND c.mutation_id IN (SELECT h.mutation_id
                        FROM record_changes h
                        WHERE h.restaurant_id = sqlc.arg(restaurant_id)
                          AND h.superseded_by IS NOT NULL AND h.superseded_at IS NULL
                        LIMIT sqlc.arg(max_rows)
                        FOR UPDATE SKIP LOCKED);

-- name: RecordChangesCompact :execrows
-- Drops the data of up to max_rows versions superseded before horizon
-- (now - FOODSAFE_COMPACT_AFTER), oldest first. The rows stay: mutation
-- id, record, sequence, deleted and request digest still answer replays.
-- record_changes_compactable_idx (a range of superseded_at, in order),
-- record_changes_pkey.
UPDATE record_changes c
SET data = NULL, compacted_at = sqlc.arg(now)::bigint
WHERE c.restaurant_id = sqlc.arg(restaurant_id)
  AND c.mutation_id IN (SELECT h.mutation_id
                        FROM record_changes h
                        WHERE h.restaurant_id = sqlc.arg(restaurant_id)
                          AND h.superseded_at IS NOT NULL AND h.compacted_at IS NULL
                          AND h.superseded_at < sqlc.arg(horizon)::bigint
                        ORDER BY h.superseded_at
                        LIMIT sqlc.arg(max_rows)
                        FOR UPDATE SKIP LOCKED);

-- name: RecordChangesCompactable :one
-- Serves `foodsafe maintain --dry-run`: what the job would stamp and
-- compact for one restaurant. record_changes_unstamped_idx,
-- record_changes_compactable_idx.
SELECT (SELECT count(*)
        FROM record_changes u
        WHERE u.restaurant_id = sqlc.arg(restaurant_id)
          AND u.superseded_by IS NOT NULL AND u.superseded_at IS NULL)::bigint AS unstamped,
       (SELECT count(*)
        FROM record_changes h
        WHERE h.restaurant_id = sqlc.arg(restaurant_id)
          AND h.superseded_at IS NOT NULL AND h.compacted_at IS NULL
          AND h.superseded_at < sqlc.arg(horizon)::bigint)::bigint AS compactable;
