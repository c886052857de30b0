-- +goose Up

-- Requests that reach no key's data (refused before authentication: no
-- credential, a malformed or unknown key, an address over its budget;
-- every 429; unmatched paths; the documentation; refused downloads) are
-- audited by shape rather than one row each: a count per minute, client
-- IP, method, route, status, outcome and key, added to by every server
-- (an upsert per flush, at most one statement a second per server). A
-- flood from one address is then a few rows a minute instead of one per
-- request. Rows per minute are bounded by the distinct shapes seen: per
-- client address at most its budget's worth of refusals before it is
-- spent, then one row per route and method it keeps trying; the method
-- is one of a closed set. Partitioned by day like audit_events (the same
-- functions create and drop both tables' partitions, so
-- FOODSAFE_AUDIT_RETENTION applies to both), and, like it, kept on the
-- Citus coordinator.
CREATE TABLE audit_counts (
    minute        timestamptz NOT NULL,
    client_ip     inet NOT NULL,
    method        text NOT NULL,
    route         text NOT NULL,
    status        smallint NOT NULL,
    outcome       text NOT NULL,
    key_public_id text NOT NULL,
    requests      bigint NOT NULL CONSTRAINT audit_counts_requests_positive CHECK (requests > 0),
    PRIMARY KEY (minute, client_ip, method, route, status, outcome, key_public_id)
) PARTITION BY RANGE (minute);

COMMENT ON TABLE audit_counts IS
    'Requests audited by shape: refused before authentication, rate limited, unmatched, documentation, refused downloads. One row per minute, client IP, method, route, status, outcome and key, with the number of requests; servers add to it. Partitioned by day of minute (UTC): audit_counts_pYYYYMMDD, created and dropped with audit_events''s partitions. Never holds secrets.';
COMMENT ON COLUMN audit_counts.minute IS 'The minute (UTC) the requests ended in.';
COMMENT ON COLUMN audit_counts.client_ip IS 'The client address (behind FOODSAFE_TRUSTED_PROXIES, the one they forwarded); :: when none was known.';
COMMENT ON COLUMN audit_counts.method IS 'GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS; other for any other method.';
COMMENT ON COLUMN audit_counts.route IS 'Route template in the OpenAPI document''s form, "(unmatched)" for unknown paths.';
COMMENT ON COLUMN audit_counts.outcome IS 'Why the requests were refused (missing, malformed, unknown, revoked, expired, no-grants, rate-limited), empty otherwise.';
COMMENT ON COLUMN audit_counts.key_public_id IS 'Public id of an existing key the requests presented (revoked, expired, without grants, or over its budget), empty otherwise: ids that name no key are not kept.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_audit_partition_create(day date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    created boolean := false;
    parent  text;
BEGIN
    -- Concurrent callers (replicas, the writer and the job) queue here
    -- instead of failing on each other's CREATE.
    PERFORM pg_advisory_xact_lock(hashtext('foodsafe_audit_partition_create'));
    FOREACH parent IN ARRAY ARRAY['audit_events', 'audit_counts'] LOOP
        IF to_regclass(format('%s_p%s', parent, to_char(day, 'YYYYMMDD'))) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               parent || '_p' || to_char(day, 'YYYYMMDD'), parent,
                               day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
                created := true;
            EXCEPTION WHEN invalid_object_definition THEN
                -- The day is covered already (audit_events_before_...).
            END;
        END IF;
    END LOOP;
    RETURN created;
END $$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_create(date) IS
    'Creates audit_events_pYYYYMMDD and audit_counts_pYYYYMMDD for one UTC day unless the day is covered; true when it created one.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_audit_partition_bounds() RETURNS TABLE (partition text, upper_bound timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent IN ('audit_events'::regclass, 'audit_counts'::regclass)
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_bounds() IS
    'The partitions of audit_events and audit_counts and the end (exclusive) of the time each covers.';
COMMENT ON FUNCTION foodsafe_audit_partition_drop(text) IS
    'Drops one partition of audit_events or audit_counts (retention); refuses any other table. Waits at most 5 s for its lock.';

-- The days already prepared for audit_events get their audit_counts
-- partition now; later days are made by the maintenance job (and on
-- demand by the writer), as before.
-- +goose StatementBegin
DO $$
DECLARE
    d date;
BEGIN
    FOR d IN SELECT DISTINCT to_date(substring(b.partition FROM 'audit_events_p([0-9]{8})$'), 'YYYYMMDD')
             FROM foodsafe_audit_partition_bounds() AS b (partition, upper_bound)
             WHERE b.partition ~ '^audit_events_p[0-9]{8}$' LOOP
        PERFORM foodsafe_audit_partition_create(d);
    END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_audit_partition_bounds() RETURNS TABLE (partition text, upper_bound timestamptz)
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
CREATE OR REPLACE FUNCTION foodsafe_audit_partition_create(day date) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('foodsafe_audit_partition_create'));
    IF to_regclass(format('audit_events_p%s', to_char(day, 'YYYYMMDD'))) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)',
                   'audit_events_p' || to_char(day, 'YYYYMMDD'),
                   day::timestamp AT TIME ZONE 'UTC', (day + 1)::timestamp AT TIME ZONE 'UTC');
    RETURN true;
EXCEPTION WHEN invalid_object_definition THEN
    RETURN false;
END $$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_audit_partition_create(date) IS
    'Creates audit_events_pYYYYMMDD for one UTC day unless the day is covered; true when it created one.';
COMMENT ON FUNCTION foodsafe_audit_partition_drop(text) IS
    'Drops one partition of audit_events (retention); refuses any other table. Waits at most 5 s for its lock.';
DROP TABLE audit_counts;
