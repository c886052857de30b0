-- name: KeyAuthLookup :many
-- Serves every authenticated request the key cache cannot answer: the key
-- and its grants in one round trip, one row per scope set the key holds,
-- with every restaurant holding that set (key_grant_sets, migration
-- 00043): a key of 20,000 restaurants x 25 scopes, the same on each, is
-- one row of 20,000 ids, not 500,000 grant rows. A key whose sets are
-- missing (its grants changed by hand and not rebuilt) is read from
-- key_grants instead, one row per restaurant, which is correct at the old
-- cost. The caller sorts the scopes it receives and shares one list
-- between restaurants holding the same scopes. api_keys_public_id_key,
-- then key_grant_sets_pkey (prefix key_id), or key_grants_pkey (prefix
-- key_id) read in index order, its GROUP BY streaming with no sort. A key
-- without grants is one row with NULL arrays.
SELECT k.id, k.public_id, k.secret_sha256, k.expires_at, k.revoked_at,
       g.restaurant_ids::text[] AS restaurant_ids, g.scopes::text[] AS scopes
FROM api_keys k
LEFT JOIN LATERAL (
    SELECT s.restaurant_ids, s.scopes
    FROM key_grant_sets s
    WHERE s.key_id = k.id
    UNION ALL
    SELECT ARRAY[kg.restaurant_id], array_agg(kg.scope)
    FROM key_grants kg
    WHERE kg.key_id = k.id
      AND NOT EXISTS (SELECT FROM key_grant_sets s WHERE s.key_id = k.id)
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
