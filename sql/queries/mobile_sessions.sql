-- name: SessionInsert :one
-- Serves POST /v1/mobile/sessions.
INSERT INTO mobile_sessions (public_id, token_sha256, key_id, expires_at)
VALUES (sqlc.arg(public_id), sqlc.arg(token_sha256), sqlc.arg(key_id), sqlc.arg(expires_at))
RETURNING id;

-- name: SessionGrantAdd :exec
-- Serves POST /v1/mobile/sessions. session_grants_pkey.
INSERT INTO session_grants (session_id, restaurant_id, scope)
SELECT sqlc.arg(session_id), sqlc.arg(restaurant_id), unnest(sqlc.arg(scopes)::text[]);

-- name: SessionDeleteExpired :exec
-- Housekeeping when a key opens a session: drops its expired ones.
-- mobile_sessions_key_idx.
DELETE FROM mobile_sessions
WHERE key_id = sqlc.arg(key_id) AND expires_at < now();

-- name: SessionAuthLookup :one
-- Serves every request made with a session token: the session, the
-- public id of its key and the token's grants in one round trip. The
-- key's state and grants are then read by KeyAuthLookup, as for a key
-- (its few rows of key_grant_sets, migration 00043), not here: a token of
-- a key of 20,000 restaurants x 25 scopes would otherwise read the key's
-- 500,000 grants on every request. mobile_sessions_public_id_key,
-- api_keys_pkey and session_grants_pkey (prefix scan).
SELECT s.id, s.public_id, s.token_sha256, s.expires_at, k.public_id AS key_public_id,
       COALESCE((SELECT array_agg(sg.restaurant_id ORDER BY sg.restaurant_id, sg.scope) FROM session_grants sg WHERE sg.session_id = s.id),
                '{}')::text[] AS session_grant_restaurants,
       COALESCE((SELECT array_agg(sg.scope ORDER BY sg.restaurant_id, sg.scope) FROM session_grants sg WHERE sg.session_id = s.id),
                '{}')::text[] AS session_grant_scopes
FROM mobile_sessions s
JOIN api_keys k ON k.id = s.key_id
WHERE s.public_id = sqlc.arg(public_id);

-- name: SessionDeleteCarrying :execrows
-- Serves `foodsafe keys ungrant`, in its transaction: every session of the
-- key that carries one of the removed grants (all scopes of the restaurant
-- when scopes is empty) is deleted, so restoring the grant later does not
-- bring the token back. mobile_sessions_key_idx (prefix key_id), then
-- session_grants_pkey (prefix session_id, restaurant_id).
DELETE FROM mobile_sessions s
WHERE s.key_id = sqlc.arg(key_id)
  AND EXISTS (SELECT 1 FROM session_grants g
              WHERE g.session_id = s.id AND g.restaurant_id = sqlc.arg(restaurant_id)
                AND (cardinality(sqlc.arg(scopes)::text[]) = 0 OR g.scope = ANY (sqlc.arg(scopes)::text[])));
