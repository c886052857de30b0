-- name: GrantAddMany :exec
-- Serves `keys create` and `keys grant`: many (restaurant, scope) pairs
-- in one statement, as parallel arrays, so a key of 20,000 restaurants x
-- 25 scopes is a few statements, not 20,000 round trips; idempotent.
-- key_grants_pkey (the conflict arbiter). The two arrays have the same
-- length, so the two unnest() run in step: element i of each is one row.
INSERT INTO key_grants (key_id, restaurant_id, scope)
SELECT sqlc.arg(key_id), unnest(sqlc.arg(restaurant_ids)::text[]), unnest(sqlc.arg(scopes)::text[])
ON CONFLICT DO NOTHING;

-- name: GrantRemoveScopes :execrows
-- Serves `keys ungrant KEY RESTAURANT=SCOPE,...`. key_grants_pkey.
DELETE FROM key_grants
WHERE key_id = sqlc.arg(key_id)
  AND restaurant_id = sqlc.arg(restaurant_id)
  AND scope = ANY (sqlc.arg(scopes)::text[]);

-- name: GrantRemoveRestaurant :execrows
-- Serves `keys ungrant KEY RESTAURANT`: every scope of that restaurant.
-- key_grants_pkey (prefix key_id, restaurant_id).
DELETE FROM key_grants
WHERE key_id = sqlc.arg(key_id)
  AND restaurant_id = sqlc.arg(restaurant_id);

-- name: GrantListForKey :many
-- Serves `foodsafe keys list --grants`: the key's next max_rows
-- restaurants after `after`, each with its scopes joined by commas, so a
-- key of 20,000 restaurants is listed a page at a time in bounded memory.
-- key_grants_pkey (prefix key_id, restaurant_id), read in index order:
-- the GROUP BY streams over it with no sort of the key's grants.
SELECT kg.restaurant_id, string_agg(kg.scope, ',' ORDER BY kg.scope)::text AS scopes
FROM key_grants kg
WHERE kg.key_id = sqlc.arg(key_id) AND kg.restaurant_id > sqlc.arg(after)::text
GROUP BY kg.restaurant_id
ORDER BY kg.restaurant_id
LIMIT sqlc.arg(max_rows);

-- name: KeyGrantSetsRebuild :exec
-- Serves the key commands, last in their transaction: rebuilds the key's
-- summary that KeyAuthLookup reads (foodsafe_key_grant_sets_rebuild,
-- migration 00043: key_grants_pkey, prefix key_id, then
-- key_grant_sets_pkey). The statements before it deleted the old summary
-- (the key_grant_sets_stale_* triggers).
SELECT foodsafe_key_grant_sets_rebuild(sqlc.arg(key_id)::bigint);
