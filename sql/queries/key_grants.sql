-- name: GrantAdd :exec
-- Serves `keys create` and `keys grant`; idempotent. key_grants_pkey.
INSERT INTO key_grants (key_id, restaurant_id, scope)
SELECT sqlc.arg(key_id), sqlc.arg(restaurant_id), unnest(sqlc.arg(scopes)::text[])
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
