-- name: RecordApplyChange :one
-- Serves ingest on plain PostgreSQL, right after StreamNextSequence in the
-- same transaction: appends the change at the position StreamNextSequence
-- took and with the receivedAt it assigned (both read back from the
-- stream row this transaction holds locked),
-- marks the record's previous version superseded, and upserts the current
-- state, all in one statement. The store sends the two statements as one
-- pipeline in one implicit transaction (RecordIngest), so the stream lock
-- is held for no client round trip. (On Citus, ingest runs the three
-- statements below instead.)
-- A mutation id that exists already (a racing identical request committed
-- first) fails with a unique violation of record_changes_pkey, which rolls
-- the transaction back, the stream's position with it, so positions stay
-- gapless; the caller then answers as a replay or a conflict. (A DO NOTHING
-- there would commit the position without a change.)
-- It also raises the stream's max_record_bytes when the change is larger
-- than every version before it (the walk statements read it to read a
-- page without a byte sum), in the same transaction as the change, so no snapshot sees
-- the change without it; the row is the one StreamNextSequence locked,
-- and it is written again only when the change is the stream's largest.
-- Indexes: collection_streams_pkey (the position, and its largest
-- record), record_changes_pkey
-- (the mutation id's uniqueness, and the previous version, found by the
-- current row's mutation id), records_pkey (the current row by record id,
-- and the upsert; records_walk_idx cannot serve these clauses, see
-- RecordGet).
WITH change AS (
    INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
                                captured_at, received_at, source_version, payload_version, request_sha256)
    SELECT s.restaurant_id, s.collection, s.last_sequence, sqlc.arg(record_id),
           sqlc.arg(mutation_id), sqlc.arg(deleted), sqlc.narg(data), sqlc.arg(captured_at),
           s.last_received_at, sqlc.narg(source_version), sqlc.arg(payload_version), sqlc.arg(request_sha256)
    FROM collection_streams s
    WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)
    RETURNING restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
              received_at, source_version, payload_version
), widest AS (
    UPDATE collection_streams s
    SET max_record_bytes = octet_length(change.data::text)
    FROM change
    WHERE s.restaurant_id = change.restaurant_id AND s.collection = change.collection
      AND s.max_record_bytes < octet_length(change.data::text)
    RETURNING s.max_record_bytes
), previous AS (
    UPDATE record_changes h
    SET superseded_by = change.sequence, superseded_at = change.received_at
    FROM change
    JOIN records r ON r.restaurant_id = change.restaurant_id
                  AND r.collection = change.collection
                  AND r.record_id = change.record_id
    WHERE h.restaurant_id = r.restaurant_id AND h.mutation_id = r.mutation_id
    RETURNING h.sequence
), current AS (
    INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
                         captured_at, received_at, source_version, payload_version)
    SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
           captured_at, received_at, source_version, payload_version
    FROM change
    ON CONFLICT (restaurant_id, collection, record_id) DO UPDATE
        SET sequence        = excluded.sequence,
            mutation_id     = excluded.mutation_id,
            deleted         = excluded.deleted,
            data            = excluded.data,
            captured_at     = excluded.captured_at,
            received_at     = excluded.received_at,
            source_version  = excluded.source_version,
            payload_version = excluded.payload_version,
            changed_xact    = excluded.changed_xact
        -- Only ever forward: a stale write can never overwrite a newer state.
        WHERE records.sequence < excluded.sequence
    RETURNING records.sequence
)
SELECT restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
       received_at, source_version, payload_version
FROM change;

-- On Citus, ingest applies a change with the three statements below
-- instead of RecordApplyChange, after StreamNextSequence in the same
-- transaction and in this order, sent as one pipeline (one round trip; see
-- RecordApply in the store). Each is one statement on one restaurant's
-- rows (restaurant_id by equality), so each runs on the restaurant's shard
-- alone; a statement with data-modifying CTEs cannot (Citus plans only
-- SELECT, UPDATE and DELETE CTEs on one shard, and ran RecordApplyChange
-- through the coordinator at a thirtieth of the rate). On plain PostgreSQL
-- the single statement stays: these three measured three to four times its
-- time (BenchmarkIngestStatements).
-- The second and third act only when the first appended this change: they look for it by mutation id at this
-- collection and sequence, which the stream lock makes unique to this
-- transaction.

-- name: RecordChangeAppend :one
-- Appends the change. Returns no row when the mutation id exists already
-- (a racing identical request committed first); the caller then rolls back
-- and answers as a replay or a conflict. record_changes_pkey (ON CONFLICT).
INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
                            captured_at, received_at, source_version, payload_version, request_sha256)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(collection), sqlc.arg(sequence), sqlc.arg(record_id),
        sqlc.arg(mutation_id), sqlc.arg(deleted), sqlc.narg(data), sqlc.arg(captured_at),
        sqlc.arg(received_at), sqlc.narg(source_version), sqlc.arg(payload_version), sqlc.arg(request_sha256))
ON CONFLICT (restaurant_id, mutation_id) DO NOTHING
RETURNING restaurant_id, collection, sequence, record_id, mutation_id, deleted, data, captured_at,
          received_at, source_version, payload_version;

-- name: RecordSupersedePrevious :exec
-- Marks the record's current version superseded by the appended change,
-- received at received_at.
-- records_pkey (the current row by record id; records_walk_idx cannot
-- serve this clause, see RecordGet), record_changes_pkey (that row's
-- version by mutation id, and the appended change).
UPDATE record_changes h
SET superseded_by = sqlc.arg(sequence)::bigint, superseded_at = sqlc.arg(received_at)::bigint
FROM records r
WHERE r.restaurant_id = sqlc.arg(restaurant_id) AND r.collection = sqlc.arg(collection)
  AND r.record_id = sqlc.arg(record_id)
  AND r.sequence < sqlc.arg(sequence)
  AND h.restaurant_id = sqlc.arg(restaurant_id) AND h.mutation_id = r.mutation_id
  AND EXISTS (SELECT 1 FROM record_changes c
              WHERE c.restaurant_id = sqlc.arg(restaurant_id) AND c.mutation_id = sqlc.arg(mutation_id)
                AND c.collection = sqlc.arg(collection) AND c.sequence = sqlc.arg(sequence));

-- name: RecordUpsertCurrent :exec
-- Makes the appended change the record's current state, copied from
-- record_changes so the data crosses the wire once. record_changes_pkey,
-- records_pkey (the upsert).
INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
                     captured_at, received_at, source_version, payload_version)
SELECT c.restaurant_id, c.collection, c.record_id, c.sequence, c.mutation_id, c.deleted, c.data,
       c.captured_at, c.received_at, c.source_version, c.payload_version
FROM record_changes c
WHERE c.restaurant_id = sqlc.arg(restaurant_id) AND c.mutation_id = sqlc.arg(mutation_id)
  AND c.collection = sqlc.arg(collection) AND c.sequence = sqlc.arg(sequence)
ON CONFLICT (restaurant_id, collection, record_id) DO UPDATE
    SET sequence        = excluded.sequence,
        mutation_id     = excluded.mutation_id,
        deleted         = excluded.deleted,
        data            = excluded.data,
        captured_at     = excluded.captured_at,
        received_at     = excluded.received_at,
        source_version  = excluded.source_version,
        payload_version = excluded.payload_version,
        changed_xact    = excluded.changed_xact
    -- Only ever forward: a stale write can never overwrite a newer state.
    WHERE records.sequence < excluded.sequence;

-- name: StreamWidestRecordRaise :exec
-- On Citus, after RecordUpsertCurrent in the same pipeline: raises the
-- stream's max_record_bytes to the appended change's size when it is the
-- largest yet, as RecordApplyChange does in its statement (the walk
-- statements read it to read a page without a byte sum). One restaurant's rows, so
-- one shard. record_changes_pkey (the change by mutation id),
-- collection_streams_pkey.
UPDATE collection_streams s
SET max_record_bytes = octet_length(c.data::text)
FROM record_changes c
WHERE c.restaurant_id = sqlc.arg(restaurant_id) AND c.mutation_id = sqlc.arg(mutation_id)
  AND c.collection = sqlc.arg(collection) AND c.sequence = sqlc.arg(sequence)
  AND s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)
  AND s.max_record_bytes < octet_length(c.data::text);

-- name: RecordGet :one
-- Serves GET .../records/{recordId}: the current state, tombstones
-- included. records_pkey, the only index this clause can use
-- (records_walk_idx compares restaurant_id under "C", which it does not
-- name), so the plan holds on a never-analyzed table.
SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at,
       received_at, source_version, payload_version
FROM records
WHERE restaurant_id = sqlc.arg(restaurant_id) AND collection = sqlc.arg(collection) AND record_id = sqlc.arg(record_id);

-- name: RecordWalkPage :many
-- Serves GET .../collections/{collection}/records: one page of a walk
-- pinned at stream position P (the first page pins the stream's head H;
-- a page pinned earlier, P < H, is this statement, and a page with no pin
-- is RecordWalkFirstPage). A full walk starts at after = 0; a changes walk
-- starts at after = the position its previous walk was pinned at, and so
-- returns exactly the records whose state at P was written after that
-- position, each once. A page is the union of
--   1. current versions with sequence in (after, P]: one range scan of
--      records_walk_idx, stopped by LIMIT;
--   2. the versions as of P of the records changed since P (changed or
--      deleted since the walk began, returned as they stood at P) that
--      fall in the page: the superseded, uncompacted versions with
--      sequence in (after, B] and superseded_by in (P, H], one rectangle
--      of record_changes_lifetime_idx (a GiST index of the points
--      (sequence, superseded_by), migration 00025). It reads the versions
--      it returns and a few tree pages, however many versions were
--      written since P and however many records they changed.
--      B is the sequence of the last row of branch 1 when it is full (a
--      version beyond it would be cut from the page anyway), else P: the
--      same range of records_walk_idx again, index entries only, read only
--      when a record changed since P (an aggregate over branch 1 would do,
--      but no statement on a request path aggregates a range of records).
--      The branch runs only when P < H and after < B (one-time filters):
--      box() orders its corners, so an empty range on either axis would
--      otherwise turn into another, non-empty one.
--   3. only when (after, P] is empty: one marker row with an empty
--      record_id (never a record's id) carrying P, so that an empty page
--      still says where it is pinned. It answers a changes walk with
--      nothing to return, and shows the caller an `after` beyond the
--      stream's head (P < after), which it refuses. No table is read.
--      Its data is an untyped NULL, which takes the type of data in the
--      other branches: json, or jsonb on a table not yet migrated (00013),
--      so the statement runs on both while a large table is migrated
--      online.
--      Compacted versions are never read: a walk's cursors expire
--      FOODSAFE_CURSOR_TTL after its first page, before any version it
--      needs is compacted (FOODSAFE_COMPACT_AFTER is longer).
-- GET /v1/records reads a stream it has started with this statement too,
-- in a pipeline of several streams (db.FeedReads).
-- Records created after P are in neither. The caller merges both branches
-- by sequence and keeps the first max_rows, so the statement needs no Sort.
-- Pages are bounded by bytes as well (max_bytes, FOODSAFE_MAX_PAGE_BYTES;
-- NULL: no bound), but a running sum of the rows' bytes (a window
-- aggregate) costs a page of small records about a fifth of its rate, and
-- even unexecuted, a summed branch costs its executor setup on every
-- execution. So this statement never sums: it returns the page only when
-- no page of the stream can reach max_bytes, that is when max_rows times
-- the stream's largest record version (collection_streams.max_record_bytes,
-- which ingest raises in the transaction that writes a version, so this
-- snapshot counts a record grown since) stays under max_bytes, or
-- max_bytes is NULL (gate.narrow). Otherwise, or when the largest is
-- unknown (NULL: a stream created by a binary older than migration 00042
-- until migration 00046 measured it), branches 1 and 2 are off (one-time
-- filters) and it returns only a marker row, with sum_bytes true unless
-- (after, P] is empty (branch 3's marker: there is no page to sum), and
-- the caller runs RecordWalkPageSummed, which bounds the page by its
-- bytes. The versions of branch 2 are written no later than P, so that
-- largest bounds them too. sum_bytes is false on every other row. (gate
-- follows bound only so that the parameters are numbered as in
-- RecordWalkPageSummed.)
-- The head H and the largest record come from the stream's row, one probe
-- of collection_streams_pkey: ingest raises last_sequence in the
-- transaction that writes the version at it, holding the row locked until
-- it commits, and positions are gapless (RecordApplyChange), so every
-- position up to the last_sequence this snapshot sees is committed and
-- visible, and none above it is. (H was the newest position in records,
-- a backward probe of records_walk_idx: the same position, for a second
-- probe; docs/performance.md, "One probe, and the sum in a statement of
-- its own", gives what the one probe and the summed branch moved out
-- saved.) The
-- row is read through an aggregate, which makes the one row of a stream
-- without a row (H = 0, no record: unwritten, nothing to sum): the
-- primary key matches at most one row, so it aggregates that row
-- whatever the statistics (no other aggregate is on a request path: over
-- a range of records_walk_idx, a planner without statistics reads the
-- stream's whole range), and on Citus the whole statement still routes
-- to the restaurant's shard.
-- Every read of records says `restaurant_id = $1 COLLATE "C"`: records_walk_idx
-- compares restaurant_id under "C" (migration 00006), so it is the only
-- index matching these clauses, and lookups by record id, which do not name
-- the collation, can never take it, with or without statistics. Branch 2
-- states the predicate of record_changes_lifetime_idx, and its rectangle
-- is the only clause beyond the stream that any index of record_changes
-- matches, so it takes that index with or without statistics.
WITH head AS (
    SELECT COALESCE(max(s.last_sequence), 0)::bigint AS h, max(s.max_record_bytes) AS widest,
           count(*) = 0 AS unwritten
    FROM collection_streams s
    WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)
), pin AS (
    SELECT COALESCE(sqlc.narg(pinned)::bigint, head.h)::bigint AS p, head.h FROM head
), bound AS (
    SELECT COALESCE((SELECT r.sequence FROM records r
                     WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
                       AND r.sequence > sqlc.arg(after_sequence)
                       AND r.sequence <= (SELECT p FROM pin)
                     ORDER BY r.sequence
                     OFFSET sqlc.arg(max_rows)::integer - 1
                     LIMIT 1),
                    (SELECT p FROM pin))::bigint AS b
), gate AS (
    SELECT (COALESCE(head.widest * sqlc.arg(max_rows)::integer < sqlc.narg(max_bytes)::bigint, head.unwritten)
            OR sqlc.narg(max_bytes)::bigint IS NULL) AS narrow
    FROM head
)
(SELECT (SELECT p FROM pin)::bigint AS pinned, r.record_id, r.sequence, r.mutation_id, r.deleted, r.data,
        r.captured_at, r.received_at, r.source_version, r.payload_version, false AS sum_bytes
 FROM records r
 WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
   AND r.sequence > sqlc.arg(after_sequence)
   AND r.sequence <= (SELECT p FROM pin)
   AND (SELECT narrow FROM gate)
 ORDER BY r.sequence
 LIMIT sqlc.arg(max_rows))
UNION ALL
(SELECT (SELECT p FROM pin)::bigint AS pinned, h.record_id, h.sequence, h.mutation_id, h.deleted, h.data,
        h.captured_at, h.received_at, h.source_version, h.payload_version, false
 FROM record_changes h
 WHERE (SELECT narrow FROM gate)
   AND (SELECT p < h FROM pin)
   AND sqlc.arg(after_sequence) < (SELECT b FROM bound)
   AND h.restaurant_id = sqlc.arg(restaurant_id) AND h.collection = sqlc.arg(collection)
   AND h.superseded_by IS NOT NULL AND h.compacted_at IS NULL
   AND point(h.sequence, h.superseded_by)
       <@ box(point(sqlc.arg(after_sequence) + 1, (SELECT p FROM pin) + 1),
              point((SELECT b FROM bound), (SELECT h FROM pin))))
UNION ALL
(SELECT pin.p, ''::text, pin.p, ''::text, false, NULL, 0::bigint, 0::bigint, NULL::text, 0::integer,
        NOT gate.narrow AND pin.p > sqlc.arg(after_sequence)
 FROM pin, gate
 WHERE pin.p <= sqlc.arg(after_sequence) OR NOT gate.narrow);

-- name: RecordWalkPageSummed :many
-- Serves the pages RecordWalkPage declines (its sum_bytes marker): those
-- of a stream whose largest record version could carry a page to
-- max_bytes. RecordWalkPage's branches, head and pin, with branch 1 bounded
-- by bytes: a row is sent while the data of the rows before the one
-- before it (a running sum in the index's order, no Sort) is under
-- max_bytes, that is the rows of a page that ends with the row reaching
-- max_bytes, and one more, which tells the caller the page is not the
-- last. The rows cut are read in the database (their size) but never
-- sent. B, the end of branch 2's rectangle, is then the last row branch
-- 1 sent when it is cut by max_bytes (the one row sent whose records
-- before it reach max_bytes, the same running sums read again from the
-- rows' headers: octet_length of json does not detoast), so a page cut
-- after a few large records is not sent the versions beyond them, which
-- the caller would cut. The caller cuts the merged page by bytes again,
-- exactly (the versions of branch 2 are bounded here by B, not by their
-- own bytes). It runs on its own snapshot, after RecordWalkPage's: it
-- reads the head itself, and a pinned page's rows depend only on its pin.
-- sum_bytes is always false. Indexes: collection_streams_pkey (the
-- head), records_walk_idx, record_changes_lifetime_idx, as RecordWalkPage.
WITH head AS (
    SELECT COALESCE((SELECT s.last_sequence FROM collection_streams s
                     WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)),
                    0)::bigint AS h
), pin AS (
    SELECT COALESCE(sqlc.narg(pinned)::bigint, head.h)::bigint AS p, head.h FROM head
), bound AS (
    SELECT LEAST(COALESCE((SELECT r.sequence FROM records r
                           WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
                             AND r.sequence > sqlc.arg(after_sequence)
                             AND r.sequence <= (SELECT p FROM pin)
                           ORDER BY r.sequence
                           OFFSET sqlc.arg(max_rows)::integer - 1
                           LIMIT 1),
                          (SELECT p FROM pin)),
                 (SELECT s.sequence
                  FROM (SELECT r.sequence,
                               sum(octet_length(r.data::text)) OVER (ORDER BY r.sequence ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS before_previous,
                               sum(octet_length(r.data::text)) OVER (ORDER BY r.sequence ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
                        FROM records r
                        WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
                          AND r.sequence > sqlc.arg(after_sequence)
                          AND r.sequence <= (SELECT p FROM pin)
                        ORDER BY r.sequence
                        LIMIT sqlc.arg(max_rows)) s
                  WHERE s.before >= sqlc.narg(max_bytes)::bigint
                    AND (s.before_previous IS NULL OR s.before_previous < sqlc.narg(max_bytes)::bigint)
                  LIMIT 1))::bigint AS b
)
(SELECT w.pinned, w.record_id, w.sequence, w.mutation_id, w.deleted, w.data,
        w.captured_at, w.received_at, w.source_version, w.payload_version, false AS sum_bytes
 FROM (SELECT (SELECT p FROM pin)::bigint AS pinned, r.record_id, r.sequence, r.mutation_id, r.deleted, r.data,
              r.captured_at, r.received_at, r.source_version, r.payload_version,
              sum(octet_length(r.data::text)) OVER (ORDER BY r.sequence ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS before_previous
       FROM records r
       WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
         AND r.sequence > sqlc.arg(after_sequence)
         AND r.sequence <= (SELECT p FROM pin)
       ORDER BY r.sequence
       LIMIT sqlc.arg(max_rows)) w
 WHERE w.before_previous IS NULL OR w.before_previous < sqlc.narg(max_bytes)::bigint OR sqlc.narg(max_bytes)::bigint IS NULL)
UNION ALL
(SELECT (SELECT p FROM pin)::bigint AS pinned, h.record_id, h.sequence, h.mutation_id, h.deleted, h.data,
        h.captured_at, h.received_at, h.source_version, h.payload_version, false
 FROM record_changes h
 WHERE (SELECT p < h FROM pin)
   AND sqlc.arg(after_sequence) < (SELECT b FROM bound)
   AND h.restaurant_id = sqlc.arg(restaurant_id) AND h.collection = sqlc.arg(collection)
   AND h.superseded_by IS NOT NULL AND h.compacted_at IS NULL
   AND point(h.sequence, h.superseded_by)
       <@ box(point(sqlc.arg(after_sequence) + 1, (SELECT p FROM pin) + 1),
              point((SELECT b FROM bound), (SELECT h FROM pin))))
UNION ALL
(SELECT pin.p, ''::text, pin.p, ''::text, false, NULL, 0::bigint, 0::bigint, NULL::text, 0::integer, false
 FROM pin
 WHERE pin.p <= sqlc.arg(after_sequence));

-- name: RecordWalkFirstPage :many
-- Serves the first page of a walk (no cursor) and of a changes walk:
-- RecordWalkPage pinned at the head H it reads, which leaves it one branch.
-- The versions superseded after the pin (branch 2 there) are those with
-- superseded_by in (H, H], which is empty, so it reads records alone:
--   1. current versions with sequence in (after, H]: one range scan of
--      records_walk_idx, stopped by LIMIT, run only when no page of the
--      stream can reach max_bytes, as in RecordWalkPage;
--   2. only when (after, H] is empty: the marker row of RecordWalkPage,
--      carrying H; or, when a page could reach max_bytes and (after, H] is
--      not empty, the marker with sum_bytes true, on which the caller
--      runs RecordWalkFirstPageSummed.
-- GET /v1/records reads the first page of each stream it reaches with it,
-- many streams in one pipeline (db.FeedReads).
-- It is what a polling partner runs most (a changes walk that finds
-- nothing, or a page of what changed), and without the history branch
-- and the pin's parameter the executor sets up and evaluates about half
-- the plan nodes on every execution. The head and the stream's largest
-- record are read as in RecordWalkPage (collection_streams_pkey, one
-- probe), and the same `restaurant_id = $1 COLLATE "C"` keeps the scan on
-- records_walk_idx.
WITH head AS (
    SELECT COALESCE(max(s.last_sequence), 0)::bigint AS h, max(s.max_record_bytes) AS widest,
           count(*) = 0 AS unwritten
    FROM collection_streams s
    WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)
), gate AS (
    SELECT head.h, head.h <= sqlc.arg(after_sequence)::bigint AS empty,
           (COALESCE(head.widest * sqlc.arg(max_rows)::integer < sqlc.narg(max_bytes)::bigint, head.unwritten)
            OR sqlc.narg(max_bytes)::bigint IS NULL) AS narrow
    FROM head
)
(SELECT (SELECT h FROM gate)::bigint AS pinned, r.record_id, r.sequence, r.mutation_id, r.deleted, r.data,
        r.captured_at, r.received_at, r.source_version, r.payload_version, false AS sum_bytes
 FROM records r
 WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
   AND r.sequence > sqlc.arg(after_sequence)
   AND r.sequence <= (SELECT h FROM gate)
   AND (SELECT narrow FROM gate)
 ORDER BY r.sequence
 LIMIT sqlc.arg(max_rows))
UNION ALL
(SELECT gate.h, ''::text, gate.h, ''::text, false, NULL, 0::bigint, 0::bigint, NULL::text, 0::integer,
        NOT gate.narrow AND NOT gate.empty
 FROM gate
 WHERE gate.empty OR NOT gate.narrow);

-- name: RecordWalkFirstPageSummed :many
-- Serves the first pages RecordWalkFirstPage declines (its sum_bytes
-- marker): RecordWalkFirstPage with branch 1 bounded by bytes as
-- RecordWalkPageSummed bounds it (a running sum in the index's order).
-- It reads the head itself, on its own snapshot. sum_bytes is always
-- false. collection_streams_pkey (the head), records_walk_idx.
WITH head AS (
    SELECT COALESCE((SELECT s.last_sequence FROM collection_streams s
                     WHERE s.restaurant_id = sqlc.arg(restaurant_id) AND s.collection = sqlc.arg(collection)),
                    0)::bigint AS h
)
(SELECT w.pinned, w.record_id, w.sequence, w.mutation_id, w.deleted, w.data,
        w.captured_at, w.received_at, w.source_version, w.payload_version, false AS sum_bytes
 FROM (SELECT (SELECT h FROM head)::bigint AS pinned, r.record_id, r.sequence, r.mutation_id, r.deleted, r.data,
              r.captured_at, r.received_at, r.source_version, r.payload_version,
              sum(octet_length(r.data::text)) OVER (ORDER BY r.sequence ROWS BETWEEN UNBOUNDED PRECEDING AND 2 PRECEDING) AS before_previous
       FROM records r
       WHERE r.restaurant_id = sqlc.arg(restaurant_id) COLLATE "C" AND r.collection = sqlc.arg(collection)
         AND r.sequence > sqlc.arg(after_sequence)
         AND r.sequence <= (SELECT h FROM head)
       ORDER BY r.sequence
       LIMIT sqlc.arg(max_rows)) w
 WHERE w.before_previous IS NULL OR w.before_previous < sqlc.narg(max_bytes)::bigint OR sqlc.narg(max_bytes)::bigint IS NULL)
UNION ALL
(SELECT head.h, ''::text, head.h, ''::text, false, NULL, 0::bigint, 0::bigint, NULL::text, 0::integer, false
 FROM head
 WHERE head.h <= sqlc.arg(after_sequence));
