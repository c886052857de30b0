-- +goose Up

-- Every server keeps the keys it has authenticated in memory and drops
-- them when a key changes (README, "Keys, scopes and access"). These
-- triggers announce every change on the channel foodsafe_keys, whoever
-- makes it (the key commands, a DBA's UPDATE in psql), so no edit of
-- api_keys or key_grants can leave a server answering from what it held
-- before. NOTIFY is transactional: listeners hear it once the change
-- commits, and a rolled-back edit says nothing.
--
-- Not on Citus: the tables are reference tables there, whose triggers
-- fire on the workers, where no server listens; the servers keep no key
-- cache on Citus.
-- +goose StatementBegin
CREATE FUNCTION foodsafe_keys_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('foodsafe_keys', '*');
    RETURN NULL;
END
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION foodsafe_keys_changed() IS
    'Statement trigger of api_keys and key_grants: announces on channel foodsafe_keys that keys changed, so every server drops its cached keys when the change commits.';

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
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

-- +goose Down
DROP TRIGGER IF EXISTS key_grants_changed ON key_grants;
DROP TRIGGER IF EXISTS api_keys_changed ON api_keys;
DROP FUNCTION foodsafe_keys_changed();
