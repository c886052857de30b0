-- name: RestaurantUpsert :one
-- Serves `foodsafe restaurants add`: enables a restaurant, or changes the
-- label or enablement time of an enabled one (each only when given; the
-- caller passes the time, so no volatile function runs inside COALESCE).
-- restaurants_pkey.
INSERT INTO restaurants (id, name, enabled_at)
VALUES (sqlc.arg(id), sqlc.narg(name), sqlc.arg(enabled_at))
ON CONFLICT (id) DO UPDATE
    SET name       = COALESCE(excluded.name, restaurants.name),
        enabled_at = CASE WHEN sqlc.arg(set_enabled_at)::boolean THEN excluded.enabled_at ELSE restaurants.enabled_at END
RETURNING id, name, enabled_at;

-- name: RestaurantGet :one
-- Serves ingest (is a record captured before enablement?) and the admin
-- commands. restaurants_pkey.
SELECT id, name, enabled_at FROM restaurants WHERE id = sqlc.arg(id);

-- name: RestaurantList :many
-- Serves `foodsafe restaurants list`: an admin listing of a small table,
-- by id. Sequential scan by design.
SELECT id, name, enabled_at FROM restaurants ORDER BY id;

-- name: RestaurantsExisting :many
-- Serves grant validation: which of these ids are enabled. restaurants_pkey.
SELECT id FROM restaurants WHERE id = ANY (sqlc.arg(ids)::text[]);
