-- +goose NO TRANSACTION
-- +goose Up

-- A key of 20,000 restaurants costs no more per request than one of 20
-- (docs/operators.md, "Key cache"; docs/dbas.md, "GET /v1/changes"):
--
-- 1. The triggers of migration 00012 announced every change to api_keys
--    or key_grants as '*', on which every server dropped every cached
--    key: any key command on any partner made a large key look its
--    grants up again on every server at once. They now name the keys a
--    statement changed: one notification per key on foodsafe_keys, its
--    public_id as payload, read from the statement's transition tables
--    (a trigger with transition tables takes one event, hence a trigger
--    per event). A statement that changes more than 100 keys, and a
--    TRUNCATE, still say '*'. A server drops the named key alone; on '*',
--    or a payload it cannot read, every key, as before. Servers of the
--    previous release drop every key on any notification, so a rolling
--    upgrade needs no order. The swap of triggers is one statement, so no
--    change goes unannounced while it runs.
-- 2. collection_streams_xact_idx (changed_xact): GET /v1/changes of a key
--    with many restaurants reads the streams written since its position
--    across the service (usually few), instead of probing each of its
--    restaurants. Built CONCURRENTLY: ingest updates the table all the
--    time.
--
-- Every step converges when re-run after an interruption.

DROP INDEX CONCURRENTLY IF EXISTS collection_streams_xact_idx;
CREATE INDEX CONCURRENTLY collection_streams_xact_idx ON collection_streams (changed_xact);
COMMENT ON INDEX collection_streams_xact_idx IS
    'Streams by last writing transaction, across restaurants: GET /v1/changes of a key with many restaurants (StreamsChangedSince) reads the streams written since its position in one range scan, and keeps those the key reads.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_keys_announce(public_ids text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(public_ids) > 100 THEN
        PERFORM pg_notify('foodsafe_keys', '*');
    ELSE
        -- NOTIFY sends one payload once per transaction, however often it
        -- is repeated (a key and its grants inserted together).
        PERFORM pg_notify('foodsafe_keys', k) FROM unnest(public_ids) AS k;
    END IF;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_keys_announce(text[]) IS
    'Announces on channel foodsafe_keys that the named keys changed, one notification per public_id, or ''*'' (every key) for more than 100.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_api_keys_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM foodsafe_keys_announce(ARRAY(SELECT DISTINCT n.public_id FROM new_keys n));
    ELSIF TG_OP = 'UPDATE' THEN
        -- Both ids: a hand edit may change a key's public_id.
        PERFORM foodsafe_keys_announce(ARRAY(SELECT o.public_id FROM old_keys o UNION SELECT n.public_id FROM new_keys n));
    ELSE
        PERFORM foodsafe_keys_announce(ARRAY(SELECT DISTINCT o.public_id FROM old_keys o));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_api_keys_changed() IS
    'Statement triggers of api_keys (insert, update, delete): announces the keys the statement changed (foodsafe_keys_announce), so every server drops those keys from its cache when the change commits.';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION foodsafe_key_grants_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A key deleted with its grants (ON DELETE CASCADE) is gone from
    -- api_keys by now: its own trigger announces it.
    IF TG_OP = 'INSERT' THEN
        PERFORM foodsafe_keys_announce(ARRAY(SELECT k.public_id FROM api_keys k
            WHERE k.id IN (SELECT n.key_id FROM new_grants n)));
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM foodsafe_keys_announce(ARRAY(SELECT k.public_id FROM api_keys k
            WHERE k.id IN (SELECT o.key_id FROM old_grants o UNION SELECT n.key_id FROM new_grants n)));
    ELSE
        PERFORM foodsafe_keys_announce(ARRAY(SELECT k.public_id FROM api_keys k
            WHERE k.id IN (SELECT o.key_id FROM old_grants o)));
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_key_grants_changed() IS
    'Statement triggers of key_grants (insert, update, delete): announces the keys whose grants the statement changed (foodsafe_keys_announce), so every server drops those keys from its cache when the change commits.';

COMMENT ON FUNCTION foodsafe_keys_changed() IS
    'TRUNCATE triggers of api_keys and key_grants: announces ''*'' on channel foodsafe_keys, on which every server drops every cached key.';

-- Not on Citus, where the tables are reference tables whose triggers fire
-- on the workers and no server caches keys (migration 00012).
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    DROP TRIGGER IF EXISTS api_keys_changed ON api_keys;
    DROP TRIGGER IF EXISTS key_grants_changed ON key_grants;
    DROP TRIGGER IF EXISTS api_keys_inserted ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_updated ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_deleted ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_truncated ON api_keys;
    DROP TRIGGER IF EXISTS key_grants_inserted ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_updated ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_deleted ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_truncated ON key_grants;
    CREATE TRIGGER api_keys_inserted AFTER INSERT ON api_keys REFERENCING NEW TABLE AS new_keys
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_api_keys_changed();
    CREATE TRIGGER api_keys_updated AFTER UPDATE ON api_keys REFERENCING OLD TABLE AS old_keys NEW TABLE AS new_keys
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_api_keys_changed();
    CREATE TRIGGER api_keys_deleted AFTER DELETE ON api_keys REFERENCING OLD TABLE AS old_keys
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_api_keys_changed();
    CREATE TRIGGER api_keys_truncated AFTER TRUNCATE ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_keys_changed();
    CREATE TRIGGER key_grants_inserted AFTER INSERT ON key_grants REFERENCING NEW TABLE AS new_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grants_changed();
    CREATE TRIGGER key_grants_updated AFTER UPDATE ON key_grants REFERENCING OLD TABLE AS old_grants NEW TABLE AS new_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grants_changed();
    CREATE TRIGGER key_grants_deleted AFTER DELETE ON key_grants REFERENCING OLD TABLE AS old_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grants_changed();
    CREATE TRIGGER key_grants_truncated AFTER TRUNCATE ON key_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_keys_changed();
    COMMENT ON TRIGGER api_keys_inserted ON api_keys IS 'Tells the servers'' key caches which keys were created (foodsafe_api_keys_changed).';
    COMMENT ON TRIGGER api_keys_updated ON api_keys IS 'Tells the servers'' key caches which keys changed (foodsafe_api_keys_changed).';
    COMMENT ON TRIGGER api_keys_deleted ON api_keys IS 'Tells the servers'' key caches which keys were deleted (foodsafe_api_keys_changed).';
    COMMENT ON TRIGGER api_keys_truncated ON api_keys IS 'Tells the servers'' key caches that every key changed (foodsafe_keys_changed).';
    COMMENT ON TRIGGER key_grants_inserted ON key_grants IS 'Tells the servers'' key caches which keys were granted more (foodsafe_key_grants_changed).';
    COMMENT ON TRIGGER key_grants_updated ON key_grants IS 'Tells the servers'' key caches which keys'' grants changed (foodsafe_key_grants_changed).';
    COMMENT ON TRIGGER key_grants_deleted ON key_grants IS 'Tells the servers'' key caches which keys lost grants (foodsafe_key_grants_changed).';
    COMMENT ON TRIGGER key_grants_truncated ON key_grants IS 'Tells the servers'' key caches that every key changed (foodsafe_keys_changed).';
END
$$;
-- +goose StatementEnd

COMMENT ON TABLE api_keys IS
    'Partner API keys (fsk_<public_id>.<secret>). Looked up by public_id, or served from a server''s key cache (FOODSAFE_KEY_CACHE), from which statement triggers drop each changed key (every key on TRUNCATE) through the channel foodsafe_keys; foodsafe keys revoke returns once every server has heard the change or stopped trusting its cache.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    DROP TRIGGER IF EXISTS api_keys_inserted ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_updated ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_deleted ON api_keys;
    DROP TRIGGER IF EXISTS api_keys_truncated ON api_keys;
    DROP TRIGGER IF EXISTS key_grants_inserted ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_updated ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_deleted ON key_grants;
    DROP TRIGGER IF EXISTS key_grants_truncated ON key_grants;
    DROP TRIGGER IF EXISTS api_keys_changed ON api_keys;
    DROP TRIGGER IF EXISTS key_grants_changed ON key_grants;
    CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_keys_changed();
    CREATE TRIGGER key_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON key_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_keys_changed();
    COMMENT ON TRIGGER api_keys_changed ON api_keys IS
        'Tells the servers'' key caches that keys changed (foodsafe_keys_changed).';
    COMMENT ON TRIGGER key_grants_changed ON key_grants IS
        'Tells the servers'' key caches that grants changed (foodsafe_keys_changed).';
END
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS foodsafe_key_grants_changed();
DROP FUNCTION IF EXISTS foodsafe_api_keys_changed();
DROP FUNCTION IF EXISTS foodsafe_keys_announce(text[]);
COMMENT ON FUNCTION foodsafe_keys_changed() IS
    'Statement trigger of api_keys and key_grants: announces on channel foodsafe_keys that keys changed, so every server drops its cached keys when the change commits.';
COMMENT ON TABLE api_keys IS
    'Partner API keys (fsk_<public_id>.<secret>). Looked up by public_id, or served from a server''s key cache (FOODSAFE_KEY_CACHE), which statement triggers empty on every change through the channel foodsafe_keys; foodsafe keys revoke returns once every server has heard the change or stopped trusting its cache.';
DROP INDEX CONCURRENTLY IF EXISTS collection_streams_xact_idx;
