-- +goose Up

-- A delivery's temperature records are kept as the JSON text the service
-- wrote for them (each record's product, lotNumber, unit and value, the
-- value with the number text the provider sent) and served as stored,
-- as records' data is since migration 00013: 1E+2 reads back 1E+2 and
-- -0.0 reads back -0.0, where jsonb printed 100 and 0.0. Existing rows
-- keep jsonb's text form (the same values, a space after each ':' and ',').
--
-- Cost: ALTER COLUMN TYPE rewrites deliveries and its indexes under an
-- ACCESS EXCLUSIVE lock: reads and writes of deliveries wait until it
-- commits. docs/dbas.md ("Storage of a delivery's temperature records")
-- gives the time per million rows measured by make bench-migrate-data, and
-- the online way for a table too large for that pause:
-- sql/online/00019_delivery_temperatures_as_received.sql converts in small
-- batches while the service runs, after which this migration finds the
-- column already json and only records itself. Deploy the binary that comes
-- with this migration first: it reads and writes the column as either type.
-- +goose StatementBegin
DO $$
BEGIN
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = 'deliveries'::regclass AND attname = 'temperature_records') = 'jsonb'::regtype THEN
        ALTER TABLE deliveries ALTER COLUMN temperature_records TYPE json USING temperature_records::json;
    END IF;
END
$$;
-- +goose StatementEnd

COMMENT ON COLUMN deliveries.temperature_records IS
    'Array of {product, lotNumber, unit, value} as received: JSON text, each value with the number text the provider sent (rows written before migration 00019 hold jsonb''s text form); unit is stored as given (never assumed Celsius). Served as stored.';

-- +goose Down
ALTER TABLE deliveries ALTER COLUMN temperature_records TYPE jsonb USING temperature_records::jsonb;
COMMENT ON COLUMN deliveries.temperature_records IS
    'Array of {product, lotNumber, unit, value} exactly as received; unit is stored as given (never assumed Celsius).';
