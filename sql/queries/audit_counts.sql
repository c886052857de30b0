-- name: AuditCountsAdd :exec
-- Serves the audit writer: one flush of requests audited by shape (at most
-- one a second per server), each row added to the row of the same shape
-- that another flush or server wrote. audit_counts_pkey (the conflict
-- target); the caller sends each shape once per statement. Clients are
-- address prefixes in CIDR form (203.0.113.5/32, 2001:db8:1:2::/64,
-- ::/0 for the row of the rest).
INSERT INTO audit_counts (minute, client_ip, method, route, status, outcome, key_public_id, requests)
SELECT unnest(sqlc.arg(minutes)::timestamptz[]), unnest(sqlc.arg(clients)::text[])::inet, unnest(sqlc.arg(methods)::text[]),
       unnest(sqlc.arg(routes)::text[]), unnest(sqlc.arg(statuses)::smallint[]), unnest(sqlc.arg(outcomes)::text[]),
       unnest(sqlc.arg(key_public_ids)::text[]), unnest(sqlc.arg(requests)::bigint[])
ON CONFLICT (minute, client_ip, method, route, status, outcome, key_public_id)
DO UPDATE SET requests = audit_counts.requests + EXCLUDED.requests;

-- name: AuditCountsRecent :many
-- Serves `foodsafe audit --counts` (optionally with --key): the newest
-- minutes first. audit_counts_pkey of each partition since the horizon,
-- read backwards; the key filter is applied to those rows.
SELECT minute, client_ip, method, route, status, outcome, key_public_id, requests
FROM audit_counts
WHERE minute >= sqlc.arg(since)
  AND (sqlc.narg(key_public_id)::text IS NULL OR key_public_id = sqlc.narg(key_public_id))
ORDER BY minute DESC, client_ip DESC, method DESC, route DESC, status DESC, outcome DESC, key_public_id DESC
LIMIT sqlc.arg(max_rows);
