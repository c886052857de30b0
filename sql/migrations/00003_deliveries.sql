-- +goose Up
-- Goods-in deliveries (spec 2.2). Immutable once written: the provider's
-- ingest inserts; a differing second write is refused as a conflict.
CREATE TABLE deliveries (
    restaurant_id          text NOT NULL REFERENCES restaurants (id),
    id                     text COLLATE "C" NOT NULL,
    occurred_at            bigint NOT NULL CONSTRAINT deliveries_occurred_at_nonnegative CHECK (occurred_at >= 0),
    is_compliant           boolean NOT NULL,
    supplier_id            text NOT NULL,
    supplier_name          text NOT NULL,
    temperature_records    jsonb NOT NULL,
    non_compliance_reasons text[] NOT NULL,
    corrective_actions     text[] NOT NULL,
    commentary             text,
    image_count            bigint NOT NULL CONSTRAINT deliveries_image_count_nonnegative CHECK (image_count >= 0),
    content_sha256         bytea NOT NULL,
    received_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (restaurant_id, id)
);
SELECT foodsafe_distribute('deliveries', 'tenant');

-- The list reads newest first with ties broken by id, both descending; this
-- index matches that ORDER BY exactly, so a page is one range scan that
-- stops after LIMIT rows, whatever its depth (keyset pagination).
CREATE INDEX deliveries_list_idx ON deliveries (restaurant_id, occurred_at DESC, id DESC);

COMMENT ON TABLE deliveries IS
    'Goods-in delivery checks. Read by time window (deliveries_list_idx); immutable after insert.';
COMMENT ON COLUMN deliveries.id IS
    'Delivery id; COLLATE "C" so the id tie-break is plain byte order, identical in the index, the keyset predicate and every environment.';
COMMENT ON COLUMN deliveries.occurred_at IS 'Epoch milliseconds (the wire format is a digit string).';
COMMENT ON COLUMN deliveries.temperature_records IS
    'Array of {product, lotNumber, unit, value} exactly as received; unit is stored as given (never assumed Celsius).';
COMMENT ON COLUMN deliveries.content_sha256 IS
    'SHA-256 of the canonical JSON of the delivery as accepted; a repeated PUT with the same digest is a replay, any other is a conflict.';
COMMENT ON COLUMN deliveries.received_at IS 'When the service stored the delivery; not exposed by the API.';

-- +goose Down
DROP TABLE deliveries;
