-- +goose NO TRANSACTION
-- +goose Up

-- The blob collector asks, for one digest, which assets and delivery
-- images refer to it (across restaurants: bytes are shared). Built
-- CONCURRENTLY; every step converges when re-run.
DROP INDEX CONCURRENTLY IF EXISTS asset_uploads_sha256_idx;
CREATE INDEX CONCURRENTLY asset_uploads_sha256_idx ON asset_uploads (sha256);
COMMENT ON INDEX asset_uploads_sha256_idx IS 'The assets stored under a digest: the blob collector''s reference check.';
DROP INDEX CONCURRENTLY IF EXISTS delivery_images_sha256_idx;
CREATE INDEX CONCURRENTLY delivery_images_sha256_idx ON delivery_images (sha256);
COMMENT ON INDEX delivery_images_sha256_idx IS 'The delivery images stored under a digest: the blob collector''s reference check.';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS delivery_images_sha256_idx;
DROP INDEX CONCURRENTLY IF EXISTS asset_uploads_sha256_idx;
