-- +goose Up

-- KeyAuthLookup reads a key's grants by key_grants_pkey (key_id,
-- restaurant_id, scope): one range, in restaurant order, which its GROUP BY
-- streams over. ANALYZE sees few distinct key_id values (a handful of keys,
-- one of them granted 20,000 restaurants x 25 scopes) and estimates a
-- third of the table for any key; at that estimate a full scan of
-- key_grants_restaurant_idx, which also yields restaurant order, costs
-- about the same, and the planner took it, filtering every grant of every
-- key: 75 ms for a key of one restaurant beside a key of 500,000 grants,
-- against 0.2 ms by the primary key (docs/dbas.md, "Plans that do not depend on statistics").
-- The number of distinct keys is a property of the platform, not of what
-- ANALYZE samples on a given day: many keys, each holding a small share of
-- the grants. n_distinct = -0.001 (one key per thousand grant rows) says
-- so; it takes effect at the next ANALYZE (autovacuum's or a DBA's), and
-- changes nothing before one (without statistics the primary key is
-- already the plan).
--
-- Not on Citus, where key_grants is a reference table (a copy on every
-- node): whether Citus carries a column's attribute options to the copies
-- was not tried, so the migration leaves a Citus database as it is rather
-- than fail its upgrade.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    ALTER TABLE key_grants ALTER COLUMN key_id SET (n_distinct = -0.001);
END $$;
-- +goose StatementEnd
COMMENT ON COLUMN key_grants.key_id IS
    'The key granted. n_distinct = -0.001: the planner assumes many keys each holding a small share of the grants, whatever the sample, so a key''s grants are read by key_grants_pkey (KeyAuthLookup), never by a scan of key_grants_restaurant_idx filtered on key_id.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER TABLE key_grants ALTER COLUMN key_id RESET (n_distinct);
    END IF;
END $$;
-- +goose StatementEnd
COMMENT ON COLUMN key_grants.key_id IS NULL;
