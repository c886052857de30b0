-- +goose Up
-- Restaurants whose capture has been enabled by the provider. Every other
-- table hangs off a restaurant id, which is also the natural shard key.
CREATE TABLE restaurants (
    id         text PRIMARY KEY
               CONSTRAINT restaurants_id_format CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$'),
    name       text,
    enabled_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE restaurants IS
    'Restaurants enabled for capture. A key can only be granted an enabled restaurant. Only data captured after enabled_at is held; enabled_at is never exposed by the API.';
COMMENT ON COLUMN restaurants.id IS
    'Identifier used in every API path; same pattern as ingest ids (1-200 chars, starts alphanumeric).';
COMMENT ON COLUMN restaurants.name IS
    'Optional operator-facing label; not part of the partner API.';

-- +goose Down
DROP TABLE restaurants;
