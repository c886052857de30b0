-- name: KeyAuthLookup :many
-- Serves every authenticated request the key cache cannot answer: the key
-- and its grants in one round trip, one row per granted restaurant with
-- its scopes joined by commas (a key of 20,000 restaurants x 25 scopes is
-- 20,000 rows, not 500,000, and no array of 500,000 sorted twice).
-- api_keys_public_id_key, then key_grants_pkey (prefix key_id), read in
-- index order: the GROUP BY streams over it, one restaurant after the
-- other, with no sort and no hash table; each list's scopes come in index
-- order (the caller sorts what it receives, and shares one list between
-- restaurants holding the same scopes). A key without grants is one row
-- with an empty restaurant id.
SELECT k.id, k.public_id, k.secret_sha256, k.expires_at, k.revoked_at,
       COALESCE(g.restaurant_id, '')::text AS restaurant_id, COALESCE(g.scopes, '')::text AS scopes
FROM api_keys k
LEFT JOIN LATERAL (
    SELECT kg.restaurant_id, string_agg(kg.scope, ',') AS scopes
    FROM key_grants kg
    WHERE kg.key_id = k.id
    GROUP BY kg.restaurant_id) g ON true
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
-- Serves `foodsafe keys list`: every key, oldest first, with its grants
-- counted rather than listed (a key of 20,000 restaurants x 25 scopes is
-- one row of three numbers; GrantListForKey lists them when asked). A
-- sequential scan of api_keys, by design (an admin listing of a small
-- table); each key's counts read its range of key_grants_pkey (prefix
-- key_id).
SELECT k.id, k.public_id, k.label, k.created_at, k.expires_at, k.revoked_at,
       g.restaurants, g.scopes, g.grants
FROM api_keys k
CROSS JOIN LATERAL (
    SELECT count(DISTINCT kg.restaurant_id)::bigint AS restaurants,
           count(DISTINCT kg.scope)::bigint AS scopes,
           count(*)::bigint AS grants
    FROM key_grants kg
    WHERE kg.key_id = k.id) g
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
