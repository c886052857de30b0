-- name: SessionInsert :one
-- Serves POST /v1/mobile/sessions.
INSERT INTO mobile_sessions (public_id, token_sha256, key_id, expires_at)
VALUES (sqlc.arg(public_id), sqlc.arg(token_sha256), sqlc.arg(key_id), sqlc.arg(expires_at))
RETURNING id;

-- name: SessionGrantSetsAdd :exec
-- Serves POST /v1/mobile/sessions: the token's grants in one statement,
-- whatever their number, as one row per scope set (migration 00045). Each
-- restaurant comes with the index (1-based) of its scope set in
-- scope_sets, a set given as its sorted scopes joined by commas (a scope
-- name holds none), so a set of 25 scopes is sent once, not once per
-- restaurant; the restaurants keep the order they are sent in.
-- session_grant_sets_pkey.
INSERT INTO session_grant_sets (session_id, scopes, restaurant_ids)
SELECT sqlc.arg(session_id), string_to_array((sqlc.arg(scope_sets)::text[])[r.set_index], ','),
       array_agg(r.restaurant_id ORDER BY r.n)
FROM (SELECT u.restaurant_id, u.n, (sqlc.arg(set_indexes)::int[])[u.n] AS set_index
      FROM unnest(sqlc.arg(restaurant_ids)::text[]) WITH ORDINALITY AS u(restaurant_id, n)) r
GROUP BY r.set_index;

-- name: SessionDeleteExpired :exec
-- Housekeeping when a key opens a session: drops its expired ones.
-- mobile_sessions_key_idx.
DELETE FROM mobile_sessions
WHERE key_id = sqlc.arg(key_id) AND expires_at < now();

-- name: SessionAuthLookup :many
-- Serves every request made with a session token: the session, the
-- public id of its key and the token's grants in one round trip, one row
-- per scope set the token carries (session_grant_sets, migration 00045):
-- a token of all of a key of 20,000 restaurants x 25 scopes is one row of
-- 20,000 ids, not 500,000 grant rows. A session without grants is one row
-- with NULL arrays. The key's state and grants are then read by
-- KeyAuthLookup, as for a key (its few rows of key_grant_sets, migration
-- 00043), not here. mobile_sessions_public_id_key, api_keys_pkey and
-- session_grant_sets_pkey (prefix session_id).
SELECT s.id, s.public_id, s.token_sha256, s.expires_at, s.key_id, k.public_id AS key_public_id,
       g.scopes::text[] AS scopes, g.restaurant_ids::text[] AS restaurant_ids
FROM mobile_sessions s
JOIN api_keys k ON k.id = s.key_id
LEFT JOIN LATERAL (
    SELECT sg.scopes, sg.restaurant_ids
    FROM session_grant_sets sg
    WHERE sg.session_id = s.id) g ON true
WHERE s.public_id = sqlc.arg(public_id);

-- name: SessionDeleteCarrying :execrows
-- Serves `foodsafe keys ungrant`, in its transaction: every session of the
-- key that carries one of the removed grants (all scopes of the restaurant
-- when scopes is empty) is deleted, so restoring the grant later does not
-- bring the token back. mobile_sessions_key_idx (prefix key_id), then
-- session_grant_sets_pkey (prefix session_id): each of the key's live
-- sessions' few scope sets is searched for the restaurant, an admin
-- command's work that grows with the key's open tokens and their
-- restaurants, never a request's.
DELETE FROM mobile_sessions s
WHERE s.key_id = sqlc.arg(key_id)
  AND EXISTS (SELECT 1 FROM session_grant_sets g
              WHERE g.session_id = s.id AND sqlc.arg(restaurant_id)::text = ANY (g.restaurant_ids)
                AND (cardinality(sqlc.arg(scopes)::text[]) = 0 OR g.scopes && sqlc.arg(scopes)::text[]));

-- name: SessionKeyShare :exec
-- Serves POST /v1/mobile/sessions, first in its READ COMMITTED
-- transaction: waits for a key command or a change of the key's grants
-- in flight (they lock the key's row FOR NO KEY UPDATE, migration 00043)
-- and holds off those that come later until the token is stored, so
-- SessionGrantsMissing reads the grants as such a change left them and a
-- later `keys ungrant` finds the token. api_keys_pkey.
SELECT 1 FROM api_keys WHERE id = sqlc.arg(key_id) FOR SHARE;

-- name: SessionGrantsMissing :one
-- Serves POST /v1/mobile/sessions, after SessionKeyShare: of the token's
-- grants (encoded as for SessionGrantSetsAdd), the restaurants the key
-- no longer holds at all and those on which it no longer holds every
-- scope of the token, so a token is never stored with a grant an
-- ungrant took away while the request ran. Against the key's summary
-- when it has one (key_grant_sets_pkey, prefix key_id: a few rows, each
-- restaurant in one; a key command rebuilds it in the transaction of its
-- change and any other change deletes it), one hash join of the token's
-- restaurants with the summary's whatever the scopes; else pair by pair
-- (key_grants_pkey, prefix key_id, restaurant_id: the few scopes of each
-- restaurant of the token), which only a key whose summary a change by
-- hand deleted pays.
WITH tok AS (
    SELECT u.restaurant_id,
           string_to_array((sqlc.arg(scope_sets)::text[])[(sqlc.arg(set_indexes)::int[])[u.n]], ',') AS scopes
    FROM unnest(sqlc.arg(restaurant_ids)::text[]) WITH ORDINALITY AS u(restaurant_id, n)),
summary AS (
    SELECT r.restaurant_id, kgs.scopes
    FROM key_grant_sets kgs
    CROSS JOIN LATERAL unnest(kgs.restaurant_ids) AS r(restaurant_id)
    WHERE kgs.key_id = sqlc.arg(key_id)),
has_summary AS (
    SELECT EXISTS (SELECT 1 FROM key_grant_sets k WHERE k.key_id = sqlc.arg(key_id)) AS yes),
held AS (
    SELECT tok.scopes AS wanted,
           CASE WHEN (SELECT yes FROM has_summary) THEN s.scopes ELSE p.scopes END AS scopes
    FROM tok
    LEFT JOIN summary s ON s.restaurant_id = tok.restaurant_id
    LEFT JOIN LATERAL (
        SELECT array_agg(kg.scope) AS scopes
        FROM key_grants kg
        WHERE NOT (SELECT yes FROM has_summary)
          AND kg.key_id = sqlc.arg(key_id) AND kg.restaurant_id = tok.restaurant_id) p ON true)
SELECT count(*) FILTER (WHERE held.scopes IS NULL)::bigint AS restaurants_lost,
       count(*) FILTER (WHERE held.scopes IS NOT NULL AND NOT held.wanted <@ held.scopes)::bigint AS scopes_lost
FROM held;
