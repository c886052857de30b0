-- name: KeyAuthLookup :one
-- Serves every authenticated request: the key and all its grants in one
-- round trip. api_keys_public_id_key, then key_grants_pkey (prefix key_id)
-- for each array. public_id is unique, so there is nothing to group: the
-- grants are aggregated in scalar subqueries, and the only ordering is
-- that of one key's grants inside the aggregate.
SELECT k.id, k.public_id, k.secret_sha256, k.expires_at, k.revoked_at,
       COALESCE((SELECT array_agg(g.restaurant_id ORDER BY g.restaurant_id, g.scope) FROM key_grants g WHERE g.key_id = k.id),
                '{}')::text[] AS grant_restaurants,
       COALESCE((SELECT array_agg(g.scope ORDER BY g.restaurant_id, g.scope) FROM key_grants g WHERE g.key_id = k.id),
                '{}')::text[] AS grant_scopes
FROM api_keys k
WHERE k.public_id = sqlc.arg(public_id);

-- name: KeyInsert :one
-- Serves `foodsafe keys create`.
INSERT INTO api_keys (public_id, secret_sha256, label, expires_at)
VALUES (sqlc.arg(public_id), sqlc.arg(secret_sha256), sqlc.arg(label), sqlc.narg(expires_at))
RETURNING id, public_id, label, created_at, expires_at, revoked_at;

-- name: KeyByPublicID :one
-- Serves the admin commands that address a key. api_keys_public_id_key.
SELECT id, public_id, label, created_at, expires_at, revoked_at
FROM api_keys
WHERE public_id = sqlc.arg(public_id);

-- name: KeyList :many
-- Serves `foodsafe keys list`; an admin listing of a small table, ordered
-- for humans (oldest first). Sequential scan by design.
SELECT k.id, k.public_id, k.label, k.created_at, k.expires_at, k.revoked_at,
       COALESCE(array_agg(g.restaurant_id ORDER BY g.restaurant_id, g.scope)
                FILTER (WHERE g.key_id IS NOT NULL), '{}')::text[] AS grant_restaurants,
       COALESCE(array_agg(g.scope ORDER BY g.restaurant_id, g.scope)
                FILTER (WHERE g.key_id IS NOT NULL), '{}')::text[] AS grant_scopes
FROM api_keys k
LEFT JOIN key_grants g ON g.key_id = k.id
GROUP BY k.id
ORDER BY k.created_at, k.id;

-- name: KeyRevoke :one
-- Serves `foodsafe keys revoke`; keeps the first revocation time when
-- repeated. api_keys_public_id_key. The time is a parameter: a volatile or
-- stable function inside COALESCE or CASE cannot be planned by Citus
-- (TestQueriesCallNoClockInConditionals).
UPDATE api_keys
SET revoked_at = COALESCE(revoked_at, sqlc.arg(revoked_at)::timestamptz)
WHERE public_id = sqlc.arg(public_id)
RETURNING revoked_at;
