-- The online way to apply migration 00019 (deliveries.temperature_records
-- from jsonb to json) to a table too large for the migration's pause:
-- ALTER COLUMN TYPE rewrites the table under an ACCESS EXCLUSIVE lock
-- (docs/dbas.md, "Storage of a delivery's temperature records", gives its
-- time per million rows). This script converts the rows in small batches,
-- each its own short transaction, while the service runs, and swaps the
-- columns in one transaction that only changes the catalogue. The same
-- steps as sql/online/00013_data_as_received.sql, for one NOT NULL column.
-- Plain PostgreSQL 14 or later (TID range scans); on Citus, run the
-- migration itself (ctid-based updates do not distribute).
--
-- Order:
--   1. deploy the binary that comes with migration 00019 (it reads and
--      writes the column as jsonb or json, so it serves throughout);
--   2. psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f sql/online/00019_delivery_temperatures_as_received.sql
--      (safe to re-run after an interruption: every step converges);
--   3. foodsafe migrate: 00019 finds the column already json and only
--      records itself.
--
-- Deliveries written while it runs go to temperature_records (jsonb) as
-- before, and a trigger keeps temperature_records_json in step; their
-- number text is jsonb's, like every row written before. The batches walk
-- the table once by physical position (ctid ranges of 1,000 pages, 8 MB),
-- so the whole run reads it about twice (the sweep, then the check), never
-- under a lock that stops reads or writes. Each converted row is rewritten
-- once (a new row version): the table grows by about its size until VACUUM
-- (run it after the sweep; autovacuum does too) makes the old versions'
-- space reusable. The dropped jsonb column's bytes stay in each row until
-- the table is rewritten (deliveries are never updated): pg_repack or
-- VACUUM FULL, at a quiet time, reclaims them.

-- jsonb's text form, as the migration stores it.
CREATE OR REPLACE FUNCTION foodsafe_temperatures_text(t jsonb) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT t::json $$;

-- Keeps temperature_records_json in step with every write made during the
-- conversion.
CREATE OR REPLACE FUNCTION foodsafe_temperatures_json_sync() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.temperature_records IS DISTINCT FROM OLD.temperature_records
       OR NEW.temperature_records_json IS NULL THEN
        NEW.temperature_records_json := foodsafe_temperatures_text(NEW.temperature_records);
    END IF;
    RETURN NEW;
END
$$;

-- Converts deliveries in batches of `pages` pages, committing after each.
CREATE OR REPLACE PROCEDURE foodsafe_temperatures_json_sweep(pages integer)
LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
    b bigint := 0;
BEGIN
    SELECT pg_relation_size('deliveries') / current_setting('block_size')::bigint INTO last;
    WHILE b <= last LOOP
        UPDATE deliveries SET temperature_records_json = foodsafe_temperatures_text(temperature_records)
        WHERE ctid >= format('(%s,0)', b)::tid AND ctid < format('(%s,0)', b + pages)::tid
          AND temperature_records_json IS NULL;
        COMMIT;
        b := b + pages;
    END LOOP;
END
$$;

-- Steps 1 to 4 run only while the column is still jsonb.
SELECT (SELECT atttypid FROM pg_attribute WHERE attrelid = 'deliveries'::regclass AND attname = 'temperature_records') = 'jsonb'::regtype
    AS pending \gset
\if :pending

-- 1. The new column (no rewrite) and the trigger, before any row is read.
ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS temperature_records_json json;
CREATE OR REPLACE TRIGGER deliveries_temperatures_json BEFORE INSERT OR UPDATE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION foodsafe_temperatures_json_sync();

-- 2. The sweep, then VACUUM so the old row versions' space is reused.
CALL foodsafe_temperatures_json_sweep(1000);
VACUUM deliveries;

-- 3. Proof that every row is converted: a constraint added NOT VALID (no
--    scan), validated under a lock that lets reads and writes go on. The
--    swap's SET NOT NULL reads it instead of scanning the table.
ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_temperatures_json_complete;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_temperatures_json_complete CHECK (temperature_records_json IS NOT NULL) NOT VALID;
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_temperatures_json_complete;

-- 4. The swap: catalogue changes only, under a lock held for milliseconds
--    (lock_timeout: rather fail and re-run than queue every request behind
--    a long transaction).
SET lock_timeout = '5s';
BEGIN;
LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE;
DROP TRIGGER deliveries_temperatures_json ON deliveries;
ALTER TABLE deliveries DROP COLUMN temperature_records;
ALTER TABLE deliveries RENAME COLUMN temperature_records_json TO temperature_records;
ALTER TABLE deliveries ALTER COLUMN temperature_records SET NOT NULL;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_temperatures_json_complete;
COMMIT;
RESET lock_timeout;
\endif

DROP PROCEDURE IF EXISTS foodsafe_temperatures_json_sweep(integer);
DROP FUNCTION IF EXISTS foodsafe_temperatures_json_sync();
DROP FUNCTION IF EXISTS foodsafe_temperatures_text(jsonb);
