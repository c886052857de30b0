-- +goose Up

-- Claims on stored file bytes, for the garbage collector (maintenance job
-- blob-gc). Bytes are content-addressed and shared: one blob may serve
-- several records and restaurants. Every upload claims its digest here
-- (last_put_at = now) before it writes the bytes, in a statement of its
-- own; the collector deletes bytes only under this row's lock and only
-- when the claim is older than FOODSAFE_BLOB_GRACE and no live asset or
-- delivery image refers to them. An upload racing the collector either
-- claimed first (the collector skips it) or waits for the collector's
-- commit and then writes the bytes again: bytes a reference is about to
-- need are never deleted. A reference table on Citus: digests are global.
CREATE TABLE blobs (
    sha256      text PRIMARY KEY CONSTRAINT blobs_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    last_put_at bigint NOT NULL
);
SELECT foodsafe_distribute('blobs', 'reference');

COMMENT ON TABLE blobs IS
    'One row per stored file (content address): claimed by every upload before its bytes are written, deleted by the blob collector together with the bytes.';
COMMENT ON COLUMN blobs.last_put_at IS
    'Epoch milliseconds of the latest upload of these bytes (or of migration 00010 for bytes stored before it). The collector leaves bytes alone for FOODSAFE_BLOB_GRACE after it.';

-- Bytes stored before this migration: claimed now, so the first
-- collection happens a grace period from now at the earliest.
INSERT INTO blobs (sha256, last_put_at)
SELECT sha256, (extract(epoch FROM now()) * 1000)::bigint
FROM (SELECT sha256 FROM asset_uploads UNION SELECT sha256 FROM delivery_images) s;

-- +goose Down
DROP TABLE blobs;
