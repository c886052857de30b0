-- +goose Up

-- The bytes of files each key attached to each restaurant on one UTC day,
-- checked against FOODSAFE_UPLOAD_QUOTA_BYTES before an upload's body is
-- read and added to once the upload is stored (a replay of the same bytes
-- for the same file adds nothing). One row per key and restaurant that
-- ever uploaded: a new day moves the row's day forward and starts its
-- bytes again, so the table grows with keys and restaurants, never with
-- days, and needs no pruning. Every replica reads and adds to the same
-- row, so the quota holds across replicas.
CREATE TABLE upload_quota (
    restaurant_id text   NOT NULL,
    key_id        bigint NOT NULL,
    day           date   NOT NULL,
    bytes         bigint NOT NULL CONSTRAINT upload_quota_bytes_nonnegative CHECK (bytes >= 0),
    PRIMARY KEY (restaurant_id, key_id)
);
SELECT foodsafe_distribute('upload_quota', 'tenant');

COMMENT ON TABLE upload_quota IS
    'Bytes of files (record assets, delivery images) one key attached to one restaurant on one UTC day, against FOODSAFE_UPLOAD_QUOTA_BYTES. One row per key and restaurant: a later day replaces the row''s day and starts its bytes again. Never holds secrets.';
COMMENT ON COLUMN upload_quota.key_id IS 'api_keys.id of the key that uploaded (a mobile session counts as its key).';
COMMENT ON COLUMN upload_quota.day IS 'The UTC day the bytes were counted on; a row of an earlier day counts as 0 bytes today.';
COMMENT ON COLUMN upload_quota.bytes IS 'Sum of byte_length of the files the key attached on day; a replayed upload (same bytes for the same file) adds nothing.';

-- +goose Down
DROP TABLE upload_quota;
