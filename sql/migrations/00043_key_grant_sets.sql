-- +goose Up

-- A key's first request after a restart reads its grants in one small row
-- per scope set instead of one row per grant (docs/dbas.md, "A key's
-- grants in a few rows"). A key of 20,000 restaurants x 25 scopes is
-- 500,000 rows of key_grants, and reading them was most of that request
-- (345-377 ms); large keys usually hold the same scopes on every
-- restaurant, so grouped by scope set the key is one row holding one array
-- of 20,000 restaurant ids.
--
-- key_grants stays the truth; key_grant_sets is its summary, kept so it is
-- never wrong, only sometimes missing:
--
-- 1. Every statement that changes a key's grants, by the key commands or
--    by hand, deletes that key's rows of key_grant_sets in the same
--    statement (the triggers below, which read the statement's transition
--    tables as those of migration 00021 do). TRUNCATE empties it.
-- 2. The key commands rebuild the key's rows at the end of their
--    transaction (foodsafe_key_grant_sets_rebuild); a DBA may call the
--    function after a hand edit.
-- 3. KeyAuthLookup reads key_grant_sets when the key has rows there, and
--    key_grants (as before) when it has none: a key changed by hand and
--    not rebuilt is read correctly, at the old cost.
--
-- Both the triggers and the rebuild lock the key's api_keys row (FOR NO
-- KEY UPDATE, which the foreign key's FOR KEY SHARE does not wait for)
-- before touching its rows, and the rebuild reads key_grants in a
-- statement after the lock: a rebuild therefore sees every change of the
-- key committed before it, and a change committed after it deletes what it
-- built. Both are plpgsql, whose statements each take a new snapshot in
-- READ COMMITTED, and that is what makes them right; so:
--
-- 4. The key commands run at READ COMMITTED whatever the database's
--    default_transaction_isolation (the store says so when it begins).
-- 5. In a REPEATABLE READ or SERIALIZABLE transaction every statement
--    reads the snapshot of the first: a rebuild would build from grants
--    changed since, and a trigger could not see (so not delete) a summary
--    rebuilt since. There the rebuild only deletes the key's rows (a key
--    without a summary is read from key_grants), and the triggers refuse
--    a change of key_grants with an error telling the DBA to make it at
--    READ COMMITTED.
--
-- Not on Citus, where key_grants is a reference table whose triggers fire
-- on the workers (migration 00012): no trigger is made there and the
-- rebuild writes nothing, so every lookup reads key_grants.
CREATE TABLE key_grant_sets (
    key_id         bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    scopes         text[] NOT NULL,
    restaurant_ids text[] NOT NULL,
    PRIMARY KEY (key_id, scopes)
);
SELECT foodsafe_distribute('key_grant_sets', 'reference');

COMMENT ON TABLE key_grant_sets IS
    'A summary of key_grants for KeyAuthLookup: per key, one row per distinct set of scopes with every restaurant holding exactly that set. Deleted by the key_grant_sets_stale_* triggers of key_grants whenever the key''s grants change, rebuilt by foodsafe_key_grant_sets_rebuild (the key commands call it); a key without rows here is read from key_grants. Never edit by hand: call foodsafe_key_grant_sets_rebuild(key_id).';
COMMENT ON COLUMN key_grant_sets.scopes IS 'The scope set, sorted: the scopes each restaurant of the row holds, no more and no fewer.';
COMMENT ON COLUMN key_grant_sets.restaurant_ids IS 'Every restaurant on which the key holds exactly scopes, sorted; each of the key''s restaurants is in one row.';
COMMENT ON INDEX key_grant_sets_pkey IS
    'A key''s scope sets: KeyAuthLookup reads the key''s range (prefix key_id), and the rebuild and the triggers delete it.';

-- +goose StatementBegin
CREATE FUNCTION foodsafe_key_grant_sets_rebuild(p_key_id bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    -- Outside READ COMMITTED the read below would see the grants as of the
    -- transaction's first statement, maybe before a change committed since
    -- whose trigger found no summary to delete: build nothing (a missing
    -- summary is always right).
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        DELETE FROM key_grant_sets WHERE key_id = p_key_id;
        RETURN;
    END IF;
    -- Waits for a transaction that changed the key's grants to end, so the
    -- read below (a later statement, a later snapshot) sees its change.
    PERFORM 1 FROM api_keys WHERE id = p_key_id FOR NO KEY UPDATE;
    DELETE FROM key_grant_sets WHERE key_id = p_key_id;
    INSERT INTO key_grant_sets (key_id, scopes, restaurant_ids)
    SELECT p_key_id, r.scopes, array_agg(r.restaurant_id ORDER BY r.restaurant_id)
    FROM (SELECT kg.restaurant_id, array_agg(kg.scope ORDER BY kg.scope) AS scopes
          FROM key_grants kg
          WHERE kg.key_id = p_key_id
          GROUP BY kg.restaurant_id) r
    GROUP BY r.scopes;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_key_grant_sets_rebuild(bigint) IS
    'Rebuilds a key''s rows of key_grant_sets from key_grants (key_grants_pkey, prefix key_id): the key commands call it last in their READ COMMITTED transaction; call it after changing a key''s grants by hand to make its next lookup cheap again. In a REPEATABLE READ or SERIALIZABLE transaction, whose snapshot may predate a change of the grants, it only deletes the key''s rows. Does nothing on Citus.';

-- +goose StatementBegin
CREATE FUNCTION foodsafe_key_grant_sets_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    keys bigint[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        keys := ARRAY(SELECT DISTINCT n.key_id FROM new_grants n);
    ELSIF TG_OP = 'UPDATE' THEN
        keys := ARRAY(SELECT o.key_id FROM old_grants o UNION SELECT n.key_id FROM new_grants n);
    ELSIF TG_OP = 'DELETE' THEN
        keys := ARRAY(SELECT DISTINCT o.key_id FROM old_grants o);
    END IF;
    IF cardinality(keys) = 0 THEN
        RETURN NULL;
    END IF;
    -- Outside READ COMMITTED the DELETEs below read the snapshot of the
    -- transaction's first statement and would miss a summary rebuilt
    -- since, which would go on granting what this change takes away.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'key_grants may be changed only in a READ COMMITTED transaction, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'At this isolation level the change could leave key_grant_sets, the summary key lookups read, holding what it takes away.',
                  HINT = 'Make the change in a transaction begun with BEGIN ISOLATION LEVEL READ COMMITTED (docs/dbas.md, "A key''s grants in a few rows").';
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM key_grant_sets;
        RETURN NULL;
    END IF;
    -- Serialises with a rebuild of the same keys (foodsafe_key_grant_sets_rebuild).
    PERFORM 1 FROM api_keys WHERE id = ANY (keys) ORDER BY id FOR NO KEY UPDATE;
    DELETE FROM key_grant_sets WHERE key_id = ANY (keys);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION foodsafe_key_grant_sets_stale() IS
    'Statement triggers of key_grants: deletes the rows of key_grant_sets of every key whose grants the statement changed (all of them on TRUNCATE), so a lookup never reads a summary older than the grants. Refuses the change outside READ COMMITTED, where it could not see a summary rebuilt after the transaction''s snapshot.';

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    CREATE TRIGGER key_grant_sets_stale_inserted AFTER INSERT ON key_grants REFERENCING NEW TABLE AS new_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grant_sets_stale();
    CREATE TRIGGER key_grant_sets_stale_updated AFTER UPDATE ON key_grants REFERENCING OLD TABLE AS old_grants NEW TABLE AS new_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grant_sets_stale();
    CREATE TRIGGER key_grant_sets_stale_deleted AFTER DELETE ON key_grants REFERENCING OLD TABLE AS old_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grant_sets_stale();
    CREATE TRIGGER key_grant_sets_stale_truncated AFTER TRUNCATE ON key_grants
        FOR EACH STATEMENT EXECUTE FUNCTION foodsafe_key_grant_sets_stale();
    COMMENT ON TRIGGER key_grant_sets_stale_inserted ON key_grants IS 'Deletes the key_grant_sets of the keys granted more (foodsafe_key_grant_sets_stale).';
    COMMENT ON TRIGGER key_grant_sets_stale_updated ON key_grants IS 'Deletes the key_grant_sets of the keys whose grants changed (foodsafe_key_grant_sets_stale).';
    COMMENT ON TRIGGER key_grant_sets_stale_deleted ON key_grants IS 'Deletes the key_grant_sets of the keys that lost grants (foodsafe_key_grant_sets_stale).';
    COMMENT ON TRIGGER key_grant_sets_stale_truncated ON key_grants IS 'Empties key_grant_sets (foodsafe_key_grant_sets_stale).';
    -- The keys of before this migration.
    PERFORM foodsafe_key_grant_sets_rebuild(k.id) FROM api_keys k;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER IF EXISTS key_grant_sets_stale_inserted ON key_grants;
DROP TRIGGER IF EXISTS key_grant_sets_stale_updated ON key_grants;
DROP TRIGGER IF EXISTS key_grant_sets_stale_deleted ON key_grants;
DROP TRIGGER IF EXISTS key_grant_sets_stale_truncated ON key_grants;
DROP FUNCTION IF EXISTS foodsafe_key_grant_sets_stale();
DROP FUNCTION IF EXISTS foodsafe_key_grant_sets_rebuild(bigint);
DROP TABLE IF EXISTS key_grant_sets;
