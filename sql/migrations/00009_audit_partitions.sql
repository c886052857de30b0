-- +goose Up

-- audit_events becomes a table partitioned by day (occurred_at, UTC), so
-- that retention drops a day at a time (O(1), no DELETE) and the audit
-- writer and `foodsafe audit` read and write through the parent as before.
-- One partition per day rather than per week: at the rate `make load`
-- reaches (10,000 requests/s, 864 million events a day) a week would be
-- one 6-billion-row table, and retention is then exact to the day. A
-- query of `foodsafe audit` names a time range (--since), so it reads only
-- the days it needs.
--
-- The existing table is kept as it is, renamed and attached as the first
-- partition, covering everything before tomorrow (UTC): no row is copied.
-- Attaching reads it once to check the bound, while the audit writer
-- waits (it buffers in memory meanwhile). Its id sequence carries on in a
-- plain sequence (identity columns are not allowed on partitioned tables
-- before PostgreSQL 17). audit_events stays on the Citus coordinator,
-- where it always was.
ALTER TABLE audit_events RENAME TO audit_events_legacy;
ALTER INDEX audit_events_occurred_idx RENAME TO audit_events_legacy_occurred_idx;
ALTER INDEX audit_events_key_idx RENAME TO audit_events_legacy_key_idx;
ALTER INDEX audit_events_restaurant_idx RENAME TO audit_events_legacy_restaurant_idx;
CREATE TEMPORARY TABLE audit_migration ON COMMIT DROP AS
    SELECT COALESCE(max(id), 0) + 1 AS next_id,
           (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day')::date AS cutover
    FROM audit_events_legacy;
ALTER TABLE audit_events_legacy ALTER COLUMN id DROP IDENTITY;
-- A partitioned table's primary key must include the partition key.
CREATE UNIQUE INDEX audit_events_legacy_pk ON audit_events_legacy (id, occurred_at);
ALTER TABLE audit_events_legacy DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events_legacy ADD CONSTRAINT audit_events_legacy_pkey PRIMARY KEY USING INDEX audit_events_legacy_pk;
CREATE SEQUENCE audit_events_id_seq;
SELECT setval('audit_events_id_seq', (SELECT next_id FROM audit_migration), false);

CREATE TABLE audit_events (
    id            bigint NOT NULL DEFAULT nextval('audit_events_id_seq'),
    occurred_at   timestamptz NOT NULL,
    key_public_id text,
    restaurant_id text,
    method        text NOT NULL,
    route         text NOT NULL,
    status        smallint NOT NULL,
    request_id    text NOT NULL,
    client_ip     inet,
    outcome       text,
    PRIMARY KEY (id, occurred_at)
) PARTITION BY RANGE (occurred_at);
ALTER SEQUENCE audit_events_id_seq OWNED BY audit_events.id;

CREATE INDEX audit_events_occurred_idx ON audit_events (occurred_at DESC, id DESC);
CREATE INDEX audit_events_key_idx ON audit_events (key_public_id, occurred_at DESC, id DESC)
    WHERE key_public_id IS NOT NULL;
CREATE INDEX audit_events_restaurant_idx ON audit_events (restaurant_id, occurred_at DESC, id DESC)
    WHERE restaurant_id IS NOT NULL;

-- +goose StatementBegin
DO $$
DECLARE
    cutover date := (SELECT cutover FROM audit_migration);
    legacy  text := 'audit_events_before_' || to_char(cutover, 'YYYYMMDD');
BEGIN
    -- A valid CHECK that implies the bound spares ATTACH its own scan.
    EXECUTE format('ALTER TABLE audit_events_legacy ADD CONSTRAINT audit_events_legacy_bound CHECK (occurred_at < %L)',
                   cutover::timestamp AT TIME ZONE 'UTC');
    EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION audit_events_legacy FOR VALUES FROM (MINVALUE) TO (%L)',
                   cutover::timestamp AT TIME ZONE 'UTC');
    ALTER TABLE audit_events_legacy DROP CONSTRAINT audit_events_legacy_bound;
    EXECUTE format('ALTER TABLE audit_events_legacy RENAME TO %I', legacy);
END $$;
-- +goose StatementEnd

COMMENT ON TABLE audit_events IS
    'Who called what: every request except successful health probes. Never holds secrets: keys appear by public id only. Partitioned by day of occurred_at (UTC): audit_events_pYYYYMMDD, created ahead by the maintenance job (and on demand by the writer); partitions older than FOODSAFE_AUDIT_RETENTION are dropped whole. audit_events_before_YYYYMMDD holds the rows written before partitioning.';
COMMENT ON COLUMN audit_events.key_public_id IS
    'Public id of the key (or of the key behind a session token). On a failed authentication, the public id the caller presented, if the credential was well-formed.';
COMMENT ON COLUMN audit_events.restaurant_id IS 'restaurantId path parameter as requested, whether or not the key was granted it.';
COMMENT ON COLUMN audit_events.route IS
    'Route template in the OpenAPI document''s form (e.g. /v1/restaurants/{restaurantId}/deliveries; rows written before migration 00007 say :restaurantId), "(unmatched)" for unknown paths.';
COMMENT ON COLUMN audit_events.outcome IS 'Why authentication failed (missing, malformed, unknown, revoked, expired, no-grants), or rate-limited; null otherwise.';

-- +goose StatementBegin
CREATE FUNCTION foodsafe_audit_partition_create(day date) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    -- Concurrent callers (replicas, the writer and the job) queue here
    -- instead of failing on each other's CREATE.
    PERFORM pg_advisory_xact_lock(hashtext('foodsafe_audit_partition_create'));
    IF to_regclass(format('audit_events_p%s', to_char(day, 'YYYYMMDD'))) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
                   'audit_events_p' || to_char(day, 'YYYYMMDD'),
                   day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
    RETURN true;
EXCEPTION WHEN invalid_object_definition THEN
    -- The day is covered already (by audit_events_before_...).
    RETURN false;
END $$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_create(date) IS
    'Creates audit_events_pYYYYMMDD for one UTC day unless the day is covered; true when it created one.';

-- +goose StatementBegin
CREATE FUNCTION foodsafe_audit_partition_bounds() RETURNS TABLE (partition text, upper_bound timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'audit_events'::regclass
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_bounds() IS
    'The partitions of audit_events and the end (exclusive) of the time each covers.';

-- +goose StatementBegin
CREATE FUNCTION foodsafe_audit_partition_drop(name text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM foodsafe_audit_partition_bounds() b WHERE b.partition = name) THEN
        RAISE EXCEPTION 'foodsafe_audit_partition_drop: % is not a partition of audit_events', name;
    END IF;
    -- Dropping a partition locks audit_events for an instant; never wait
    -- behind a long `foodsafe audit` read with the writer queued behind.
    PERFORM set_config('lock_timeout', '5s', true);
    EXECUTE format('DROP TABLE %I', name);
END $$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_drop(text) IS
    'Drops one partition of audit_events (retention); refuses any other table. Waits at most 5 s for its lock.';

-- +goose Down
DROP FUNCTION foodsafe_audit_partition_drop(text);
DROP FUNCTION foodsafe_audit_partition_bounds();
DROP FUNCTION foodsafe_audit_partition_create(date);
-- Back to one plain table: the partitions' rows are copied into it.
ALTER TABLE audit_events RENAME TO audit_events_partitioned;
ALTER INDEX audit_events_occurred_idx RENAME TO audit_events_partitioned_occurred_idx;
ALTER INDEX audit_events_key_idx RENAME TO audit_events_partitioned_key_idx;
ALTER INDEX audit_events_restaurant_idx RENAME TO audit_events_partitioned_restaurant_idx;
ALTER TABLE audit_events_partitioned RENAME CONSTRAINT audit_events_pkey TO audit_events_partitioned_pkey;
CREATE TABLE audit_events (
    id            bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    occurred_at   timestamptz NOT NULL,
    key_public_id text,
    restaurant_id text,
    method        text NOT NULL,
    route         text NOT NULL,
    status        smallint NOT NULL,
    request_id    text NOT NULL,
    client_ip     inet,
    outcome       text
);
INSERT INTO audit_events SELECT * FROM audit_events_partitioned;
SELECT setval(pg_get_serial_sequence('audit_events', 'id'), (SELECT COALESCE(max(id), 0) + 1 FROM audit_events), false);
ALTER TABLE audit_events ALTER COLUMN id SET GENERATED ALWAYS;
DROP TABLE audit_events_partitioned;
CREATE INDEX audit_events_occurred_idx ON audit_events (occurred_at DESC, id DESC);
CREATE INDEX audit_events_key_idx ON audit_events (key_public_id, occurred_at DESC, id DESC)
    WHERE key_public_id IS NOT NULL;
CREATE INDEX audit_events_restaurant_idx ON audit_events (restaurant_id, occurred_at DESC, id DESC)
    WHERE restaurant_id IS NOT NULL;
