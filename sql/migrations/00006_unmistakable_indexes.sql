-- +goose NO TRANSACTION
-- +goose Up

-- Secondary indexes that a lookup by primary key can never take, with or
-- without statistics.
--
-- records_walk_idx (restaurant_id, collection, sequence) and
-- deliveries_list_idx (restaurant_id, occurred_at, id) begin like their
-- table's primary key. On a table without statistics (a fresh deployment
-- before its first ANALYZE, any server with autovacuum off) the planner can
-- cost them like the primary key for a lookup by id, and ties go to the
-- newest index: a single-record read, ingest's lookup of the previous
-- version or a single delivery then read the whole stream or restaurant
-- through the secondary index, filtering the id. A generic plan made that
-- way is cached on its connection however much the table grows.
--
-- Both now compare restaurant_id under the "C" collation. An index column
-- only serves a clause of the same collation, so `restaurant_id = $1` (the
-- column's default collation) cannot use them at all, and only the walk and
-- list queries, which write `restaurant_id = $1 COLLATE "C"`, can. Equality
-- of text is bytewise under every deterministic collation, so what the
-- indexes find and enforce (records_walk_idx is unique) is unchanged.
--
-- Built CONCURRENTLY, so ingest and reads go on during the build; every
-- step converges when re-run after an interruption. Until binaries whose
-- walk and list queries name the collation are deployed, older ones walk
-- and list through the primary key and a sort: correct, slower.
DROP INDEX CONCURRENTLY IF EXISTS records_walk_c_idx;
CREATE UNIQUE INDEX CONCURRENTLY records_walk_c_idx ON records (restaurant_id COLLATE "C", collection, sequence);
DROP INDEX CONCURRENTLY IF EXISTS records_walk_idx;
ALTER INDEX records_walk_c_idx RENAME TO records_walk_idx;
COMMENT ON INDEX records_walk_idx IS
    'Walk order: sequence ascending within a stream. restaurant_id is compared under "C" so that only the walk queries (which say COLLATE "C") can use it and lookups by record id always take records_pkey, with or without statistics.';

DROP INDEX CONCURRENTLY IF EXISTS deliveries_list_c_idx;
CREATE INDEX CONCURRENTLY deliveries_list_c_idx ON deliveries (restaurant_id COLLATE "C", occurred_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_list_idx;
ALTER INDEX deliveries_list_c_idx RENAME TO deliveries_list_idx;
COMMENT ON INDEX deliveries_list_idx IS
    'Newest first, ties by id descending: one range scan per page. restaurant_id is compared under "C" so that only the list queries (which say COLLATE "C") can use it and a single delivery always takes deliveries_pkey, with or without statistics.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS records_walk_c_idx;
CREATE UNIQUE INDEX CONCURRENTLY records_walk_c_idx ON records (restaurant_id, collection, sequence);
DROP INDEX CONCURRENTLY IF EXISTS records_walk_idx;
ALTER INDEX records_walk_c_idx RENAME TO records_walk_idx;
DROP INDEX CONCURRENTLY IF EXISTS deliveries_list_c_idx;
CREATE INDEX CONCURRENTLY deliveries_list_c_idx ON deliveries (restaurant_id, occurred_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS deliveries_list_idx;
ALTER INDEX deliveries_list_c_idx RENAME TO deliveries_list_idx;
