-- +goose Up
-- One change stream per (restaurant, collection). last_sequence is the
-- stream's counter: ingest increments it with a row lock held until commit,
-- so transactions commit in sequence order and a reader that sees sequence
-- N has already seen every sequence below N (a plain nextval() would let a
-- lower number commit after a reader passed it).
CREATE TABLE collection_streams (
    restaurant_id text NOT NULL REFERENCES restaurants (id),
    collection    text NOT NULL,
    last_sequence bigint NOT NULL,
    PRIMARY KEY (restaurant_id, collection)
);
SELECT foodsafe_distribute('collection_streams', 'tenant');

COMMENT ON TABLE collection_streams IS
    'Per-stream sequence counters, row-locked by ingest; the lock serialises writers of one (restaurant, collection) and nothing else.';

-- Every accepted mutation, in stream order: the change log. It answers
-- idempotent replays (by mutation id) and the state of a record as of a
-- pinned walk position (versions superseded after the pin).
CREATE TABLE record_changes (
    restaurant_id   text NOT NULL REFERENCES restaurants (id),
    collection      text NOT NULL,
    sequence        bigint NOT NULL,
    record_id       text NOT NULL,
    mutation_id     text NOT NULL,
    deleted         boolean NOT NULL,
    data            jsonb,
    captured_at     bigint NOT NULL,
    received_at     bigint NOT NULL,
    source_version  text,
    payload_version integer NOT NULL,
    request_sha256  bytea NOT NULL,
    superseded_by   bigint,
    -- The mutation id is the idempotency key. Deliberately no index on
    -- (restaurant_id, collection, sequence): walks read the current state
    -- from records, and the only way into past versions is by superseded_by
    -- (below), so no plan can scan a stream's whole history.
    PRIMARY KEY (restaurant_id, mutation_id),
    CONSTRAINT record_changes_tombstone_has_no_data CHECK (NOT deleted OR data IS NULL),
    CONSTRAINT record_changes_superseded_later CHECK (superseded_by > sequence)
);
SELECT foodsafe_distribute('record_changes', 'tenant');

-- Walks read only versions superseded after their pinned position: a range
-- on superseded_by, bounded by the writes made since the walk began.
CREATE INDEX record_changes_superseded_idx ON record_changes (restaurant_id, collection, superseded_by)
    WHERE superseded_by IS NOT NULL;

COMMENT ON TABLE record_changes IS
    'Append-only log of accepted mutations per stream. superseded_by is set when a newer change of the same record arrives. Versions superseded longer ago than the cursor lifetime are only needed for replays of old mutation ids.';
COMMENT ON COLUMN record_changes.request_sha256 IS
    'SHA-256 of the canonical request body: the same mutation id with another digest, record or collection is a conflict.';
COMMENT ON COLUMN record_changes.superseded_by IS
    'Sequence of the next change of the same record; null while this is the current version.';
COMMENT ON COLUMN record_changes.received_at IS 'Epoch milliseconds when the service accepted the change.';
COMMENT ON COLUMN record_changes.captured_at IS 'Epoch milliseconds when the device recorded the change.';

-- The current state of every record: what a walk returns for records not
-- changed since its pin, and what a single-record read returns.
CREATE TABLE records (
    restaurant_id   text NOT NULL REFERENCES restaurants (id),
    collection      text NOT NULL,
    record_id       text NOT NULL,
    sequence        bigint NOT NULL,
    mutation_id     text NOT NULL,
    deleted         boolean NOT NULL,
    data            jsonb,
    captured_at     bigint NOT NULL,
    received_at     bigint NOT NULL,
    source_version  text,
    payload_version integer NOT NULL,
    PRIMARY KEY (restaurant_id, collection, record_id),
    CONSTRAINT records_tombstone_has_no_data CHECK (NOT deleted OR data IS NULL)
);
SELECT foodsafe_distribute('records', 'tenant');

-- The walk order: sequence ascending within a stream. Unique because a
-- sequence names one change, hence one record's current version.
CREATE UNIQUE INDEX records_walk_idx ON records (restaurant_id, collection, sequence);

COMMENT ON TABLE records IS
    'Current state per record (received-shadow snapshot): upserted by ingest, only ever to a higher sequence. Walked by records_walk_idx.';
COMMENT ON COLUMN records.deleted IS 'Tombstone: the record was deleted in the app; data is null.';

-- +goose Down
DROP TABLE records;
DROP TABLE record_changes;
DROP TABLE collection_streams;
