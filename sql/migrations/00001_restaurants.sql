-- +goose Up

-- Scaling out (README, "Scaling out"): on a database with the citus
-- extension, every table is distributed right after its CREATE TABLE, in
-- the migration that creates it (distributing later fails on the foreign
-- keys between them). Tables keyed by restaurant_id are distributed by it,
-- all co-located with deliveries; small tables every request joins
-- (restaurants, keys, grants, sessions) are reference tables, copied to
-- every node; audit_events stays on the coordinator. On plain PostgreSQL
-- the function does nothing. A new table follows the same rule: call
-- foodsafe_distribute right after creating it (sql/migrations/README.md).
-- +goose StatementBegin
CREATE FUNCTION foodsafe_distribute(tbl regclass, kind text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF kind NOT IN ('tenant', 'reference') THEN
        RAISE EXCEPTION 'foodsafe_distribute(%): kind must be tenant or reference, not %', tbl, kind;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    -- A migration's transaction mixes DDL on reference tables and on the
    -- distributed tables with foreign keys to them, which Citus allows
    -- only over one connection per node.
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    IF kind = 'reference' THEN
        PERFORM create_reference_table(tbl);
    ELSIF tbl = 'deliveries'::regclass THEN
        PERFORM create_distributed_table(tbl, 'restaurant_id', colocate_with => 'none');
    ELSE
        PERFORM create_distributed_table(tbl, 'restaurant_id', colocate_with => 'deliveries');
    END IF;
END
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION foodsafe_distribute(regclass, text) IS
    'Called by migrations right after each CREATE TABLE: on Citus distributes a tenant table by restaurant_id (co-located with deliveries) or makes a reference table; does nothing on plain PostgreSQL.';

-- Restaurants whose capture has been enabled by the provider. Every other
-- table hangs off a restaurant id, which is also the natural shard key.
CREATE TABLE restaurants (
    id         text PRIMARY KEY
               CONSTRAINT restaurants_id_format CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$'),
    name       text,
    enabled_at timestamptz NOT NULL DEFAULT now()
);
SELECT foodsafe_distribute('restaurants', 'reference');

COMMENT ON TABLE restaurants IS
    'Restaurants enabled for capture. A key can only be granted an enabled restaurant. Only data captured after enabled_at is held; enabled_at is never exposed by the API.';
COMMENT ON COLUMN restaurants.id IS
    'Identifier used in every API path; same pattern as ingest ids (1-200 chars, starts alphanumeric).';
COMMENT ON COLUMN restaurants.name IS
    'Optional operator-facing label; not part of the partner API.';

-- +goose Down
DROP TABLE restaurants;
DROP FUNCTION foodsafe_distribute(regclass, text);
