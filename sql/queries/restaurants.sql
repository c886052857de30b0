-- name: RestaurantUpsert :one
-- Serves `foodsafe restaurants add`: idempotent; a later call may set or
-- change the label but never clears it. Uses restaurants_pkey.
INSERT INTO restaurants (id, name)
VALUES (sqlc.arg(id), sqlc.narg(name))
ON CONFLICT (id) DO UPDATE
    SET name = COALESCE(excluded.name, restaurants.name)
RETURNING id, name, enabled_at;

-- name: RestaurantsExisting :many
-- Serves grant validation: which of these ids are enabled. restaurants_pkey.
SELECT id FROM restaurants WHERE id = ANY (sqlc.arg(ids)::text[]);
