-- +goose Up

-- A session token carries its grants as scope sets, as a key's summary
-- does (key_grant_sets, migration 00043): one row per distinct set of
-- scopes with every restaurant the token holds exactly that set on. A
-- token opened without restaurantId carries all of its key's grants; for
-- a key of 20,000 restaurants x 25 scopes that was 500,000 rows of
-- session_grants, inserted one statement per restaurant when the token
-- was opened and read on every request it made. As sets it is one row,
-- written by one statement and read as one row (docs/dbas.md, "A key's
-- grants in a few rows").
--
-- Unlike key_grant_sets this is not a summary of anything: it is the
-- token's grants, written once when the token is opened and never
-- changed (a token's grants never grow), deleted with the token.
CREATE TABLE session_grant_sets (
    session_id     bigint NOT NULL REFERENCES mobile_sessions (id) ON DELETE CASCADE,
    scopes         text[] NOT NULL,
    restaurant_ids text[] NOT NULL,
    PRIMARY KEY (session_id, scopes)
);
SELECT foodsafe_distribute('session_grant_sets', 'reference');

COMMENT ON TABLE session_grant_sets IS
    'The grants a session token carries, always a subset of its key''s when it was opened: one row per distinct set of scopes with every restaurant on which the token holds exactly that set. Written once when the token is opened (SessionGrantSetsAdd), read by SessionAuthLookup, deleted with the token.';
COMMENT ON COLUMN session_grant_sets.scopes IS 'The scope set, sorted: the scopes the token holds on each restaurant of the row, no more and no fewer.';
COMMENT ON COLUMN session_grant_sets.restaurant_ids IS 'Every restaurant on which the token holds exactly scopes; each restaurant of the token is in one row.';
COMMENT ON INDEX session_grant_sets_pkey IS
    'A token''s scope sets: SessionAuthLookup reads the token''s range (prefix session_id), SessionDeleteCarrying probes it.';

-- The tokens open now keep their grants.
INSERT INTO session_grant_sets (session_id, scopes, restaurant_ids)
SELECT r.session_id, r.scopes, array_agg(r.restaurant_id ORDER BY r.restaurant_id)
FROM (SELECT sg.session_id, sg.restaurant_id, array_agg(sg.scope ORDER BY sg.scope COLLATE "C") AS scopes
      FROM session_grants sg
      GROUP BY sg.session_id, sg.restaurant_id) r
GROUP BY r.session_id, r.scopes;

COMMENT ON TABLE session_grants IS
    'No longer written or read (session_grant_sets holds a token''s grants since migration 00045): kept so that servers of the previous release do not fail during a rolling upgrade; a later migration drops it.';

-- +goose Down
INSERT INTO session_grants (session_id, restaurant_id, scope)
SELECT s.session_id, r.restaurant_id, sc.scope
FROM session_grant_sets s
CROSS JOIN LATERAL unnest(s.restaurant_ids) AS r(restaurant_id)
CROSS JOIN LATERAL unnest(s.scopes) AS sc(scope)
ON CONFLICT DO NOTHING;
COMMENT ON TABLE session_grants IS 'The (restaurant, scope) pairs a session token carries: always a subset of its key''s grants.';
DROP TABLE session_grant_sets;
