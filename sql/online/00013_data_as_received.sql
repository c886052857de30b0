-- The online way to apply migration 00013 (data from jsonb to json) to a
-- table too large for the migration's pause: ALTER COLUMN TYPE rewrites the
-- table under an ACCESS EXCLUSIVE lock (docs/dbas.md, "Storage of data", gives
-- its time per million rows). This script converts the rows in small
-- batches, each its own short transaction, while the service runs, and
-- swaps the columns in one transaction that only changes the catalogue.
-- Plain PostgreSQL 14 or later (TID range scans); on Citus, run the
-- migration itself (ctid-based updates do not distribute).
--
-- Order:
--   1. deploy the binary that comes with migration 00013 (it reads and
--      writes data as jsonb or json, so it serves throughout);
--   2. psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f sql/online/00013_data_as_received.sql
--      (safe to re-run after an interruption: every step converges);
--   3. foodsafe migrate: 00013 finds data already json and only records
--      itself.
--
-- Writes made while it runs go to data (jsonb) as before, and a trigger
-- keeps data_json in step; their number text is jsonb's, like every row
-- written before. The batches walk each table once by physical position
-- (ctid ranges of 1,000 pages, 8 MB), so the whole run reads each table
-- about twice (the sweep, then the check), never under a lock that stops
-- reads or writes. Each converted row is rewritten once (a new row
-- version): the table grows by about its size until VACUUM (run it after
-- the sweep; autovacuum does too) makes the old versions' space reusable.
-- The dropped jsonb column's bytes stay in each row until that row is next
-- updated; pg_repack or VACUUM FULL, at a quiet time, reclaims them at once.

-- jsonb's text form, as the migration stores it.
CREATE OR REPLACE FUNCTION foodsafe_data_text(d jsonb) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT d::json $$;

-- Keeps data_json in step with every write made during the conversion.
CREATE OR REPLACE FUNCTION foodsafe_data_json_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.data IS DISTINCT FROM OLD.data OR (NEW.data IS NOT NULL AND NEW.data_json IS NULL) THEN
        NEW.data_json := foodsafe_data_text(NEW.data);
    END IF;
    RETURN NEW;
END
$$;

-- Converts table t in batches of `pages` pages, committing after each.
CREATE OR REPLACE PROCEDURE foodsafe_data_json_sweep(t regclass, pages integer)
LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
    b bigint := 0;
BEGIN
    SELECT pg_relation_size(t) / current_setting('block_size')::bigint INTO last;
    WHILE b <= last LOOP
        EXECUTE format('UPDATE %s SET data_json = foodsafe_data_text(data)
                        WHERE ctid >= %L::tid AND ctid < %L::tid AND data IS NOT NULL AND data_json IS NULL',
                       t, format('(%s,0)', b), format('(%s,0)', b + pages));
        COMMIT;
        b := b + pages;
    END LOOP;
END
$$;

-- Steps 1 to 3 run only while data is still jsonb.
SELECT (SELECT atttypid FROM pg_attribute WHERE attrelid = 'records'::regclass AND attname = 'data') = 'jsonb'::regtype
    AND (SELECT atttypid FROM pg_attribute WHERE attrelid = 'record_changes'::regclass AND attname = 'data') = 'jsonb'::regtype
    AS pending \gset
\if :pending

-- 1. The new column (no rewrite) and the trigger, before any row is read.
ALTER TABLE records ADD COLUMN IF NOT EXISTS data_json json;
ALTER TABLE record_changes ADD COLUMN IF NOT EXISTS data_json json;
CREATE OR REPLACE TRIGGER records_data_json BEFORE INSERT OR UPDATE ON records
    FOR EACH ROW EXECUTE FUNCTION foodsafe_data_json_sync();
CREATE OR REPLACE TRIGGER record_changes_data_json BEFORE INSERT OR UPDATE ON record_changes
    FOR EACH ROW EXECUTE FUNCTION foodsafe_data_json_sync();

-- 2. The sweep, then VACUUM so the old row versions' space is reused.
CALL foodsafe_data_json_sweep('records', 1000);
CALL foodsafe_data_json_sweep('record_changes', 1000);
VACUUM records;
VACUUM record_changes;

-- 3. Proof that every row is converted, and the constraints data_json will
--    carry as data: added NOT VALID (no scan), validated under a lock that
--    lets reads and writes go on.
ALTER TABLE records DROP CONSTRAINT IF EXISTS records_data_json_complete;
ALTER TABLE records ADD CONSTRAINT records_data_json_complete CHECK ((data IS NULL) = (data_json IS NULL)) NOT VALID;
ALTER TABLE records VALIDATE CONSTRAINT records_data_json_complete;
ALTER TABLE records DROP CONSTRAINT IF EXISTS records_tombstone_has_no_data_json;
ALTER TABLE records ADD CONSTRAINT records_tombstone_has_no_data_json CHECK (NOT deleted OR data_json IS NULL) NOT VALID;
ALTER TABLE records VALIDATE CONSTRAINT records_tombstone_has_no_data_json;
ALTER TABLE record_changes DROP CONSTRAINT IF EXISTS record_changes_data_json_complete;
ALTER TABLE record_changes ADD CONSTRAINT record_changes_data_json_complete CHECK ((data IS NULL) = (data_json IS NULL)) NOT VALID;
ALTER TABLE record_changes VALIDATE CONSTRAINT record_changes_data_json_complete;
ALTER TABLE record_changes DROP CONSTRAINT IF EXISTS record_changes_tombstone_has_no_data_json;
ALTER TABLE record_changes ADD CONSTRAINT record_changes_tombstone_has_no_data_json CHECK (NOT deleted OR data_json IS NULL) NOT VALID;
ALTER TABLE record_changes VALIDATE CONSTRAINT record_changes_tombstone_has_no_data_json;
ALTER TABLE record_changes DROP CONSTRAINT IF EXISTS record_changes_compacted_superseded_json;
ALTER TABLE record_changes ADD CONSTRAINT record_changes_compacted_superseded_json
    CHECK (compacted_at IS NULL OR (superseded_by IS NOT NULL AND data_json IS NULL)) NOT VALID;
ALTER TABLE record_changes VALIDATE CONSTRAINT record_changes_compacted_superseded_json;

-- 4. The swap: catalogue changes only, under a lock held for milliseconds
--    (lock_timeout: rather fail and re-run than queue every request behind
--    a long transaction). Dropping data drops its constraints; the
--    validated ones on data_json take their names.
SET lock_timeout = '5s';
BEGIN;
LOCK TABLE records, record_changes IN ACCESS EXCLUSIVE MODE;
DROP TRIGGER records_data_json ON records;
DROP TRIGGER record_changes_data_json ON record_changes;
ALTER TABLE records DROP CONSTRAINT records_data_json_complete;
ALTER TABLE record_changes DROP CONSTRAINT record_changes_data_json_complete;
ALTER TABLE records DROP COLUMN data;
ALTER TABLE record_changes DROP COLUMN data;
ALTER TABLE records RENAME COLUMN data_json TO data;
ALTER TABLE record_changes RENAME COLUMN data_json TO data;
ALTER TABLE records RENAME CONSTRAINT records_tombstone_has_no_data_json TO records_tombstone_has_no_data;
ALTER TABLE record_changes RENAME CONSTRAINT record_changes_tombstone_has_no_data_json TO record_changes_tombstone_has_no_data;
ALTER TABLE record_changes RENAME CONSTRAINT record_changes_compacted_superseded_json TO record_changes_compacted_superseded;
COMMIT;
RESET lock_timeout;
\endif

DROP PROCEDURE IF EXISTS foodsafe_data_json_sweep(regclass, integer);
DROP FUNCTION IF EXISTS foodsafe_data_json_sync();
DROP FUNCTION IF EXISTS foodsafe_data_text(jsonb);
