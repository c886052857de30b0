-- +goose Up

-- A record's data is kept as the JSON text the client sent (validated, with
-- the whitespace between tokens removed) and served as stored: numbers read
-- back byte for byte (1E+2 stays 1E+2, -0.0 stays -0.0, every digit of a
-- long decimal is kept) and member order is the client's. jsonb parsed
-- every value into its binary form and printed it back on every read,
-- which changed number text and cost the database a re-serialisation per
-- row returned. The json type checks the text is JSON on the way in and
-- stores it verbatim; the few statements that look inside data (->, ->>)
-- work on it unchanged, parsing only the rows they read.
--
-- Existing rows keep jsonb's text form: the same values, numbers as they
-- were served before, and a space after each ':' and ',' (insignificant in
-- JSON; compacting it in SQL took a regular expression sixteen times the
-- cast's cost per row, tests/load/migrate-data.sh). Rows written from now
-- on are stored compacted by the service.
--
-- Cost: ALTER COLUMN TYPE rewrites each table and its indexes under an
-- ACCESS EXCLUSIVE lock: reads and writes of records and record_changes
-- wait until it commits. README ("Storage of data") gives the time per
-- million rows measured by tests/load/migrate-data.sh, and the online way
-- for a table too large for that pause: sql/online/00013_data_as_received.sql
-- converts in small batches while the service runs, after which this
-- migration finds data already json and only records itself. Deploy the
-- binary that comes with this migration first: it reads and writes data as
-- either type, so it serves throughout.
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['records', 'record_changes'] LOOP
        IF (SELECT atttypid FROM pg_attribute WHERE attrelid = t::regclass AND attname = 'data') = 'jsonb'::regtype THEN
            EXECUTE format('ALTER TABLE %I ALTER COLUMN data TYPE json USING data::json', t);
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

COMMENT ON COLUMN records.data IS
    'The record as the client sent it (JSON text, validated, whitespace between tokens removed; rows written before migration 00013 hold jsonb''s text form), served as stored; null for a tombstone.';
COMMENT ON COLUMN record_changes.data IS
    'The change''s record as the client sent it (JSON text, validated, whitespace between tokens removed; rows written before migration 00013 hold jsonb''s text form), served as stored; null for a tombstone and once compacted.';

-- +goose Down
ALTER TABLE records ALTER COLUMN data TYPE jsonb USING data::jsonb;
ALTER TABLE record_changes ALTER COLUMN data TYPE jsonb USING data::jsonb;
