-- +goose Up

-- Resumable uploads in progress (draft-ietf-httpbis-resumable-upload,
-- interop version 6): one row per upload resource a device created on an
-- upload endpoint and has not completed, cancelled or let expire. The
-- bytes themselves are in the file store as pieces (one per request that
-- appended), named here in order once durably written: a piece the store
-- holds that is not listed is a write that never committed, ignored and
-- deleted with the upload. Every replica reads the same row, so any of
-- them answers HEAD and takes the next PATCH.
CREATE TABLE upload_resumptions (
    restaurant_id text     NOT NULL,
    id            text     NOT NULL,
    key_id        bigint   NOT NULL,
    kind          text     NOT NULL CONSTRAINT upload_resumptions_kind CHECK (kind IN ('asset', 'image')),
    collection    text     NOT NULL DEFAULT '',
    record_id     text     NOT NULL DEFAULT '',
    object_key    text     NOT NULL DEFAULT '',
    delivery_id   text     NOT NULL DEFAULT '',
    image_id      text     NOT NULL DEFAULT '',
    content_type  text     NOT NULL,
    sha256        text     NOT NULL,
    length        bigint,
    kept          bigint   NOT NULL DEFAULT 0 CONSTRAINT upload_resumptions_kept_nonnegative CHECK (kept >= 0),
    pieces        text[]   NOT NULL DEFAULT '{}',
    created_at    bigint   NOT NULL,
    expires_at    bigint   NOT NULL,
    PRIMARY KEY (restaurant_id, id)
);
SELECT foodsafe_distribute('upload_resumptions', 'tenant');
CREATE INDEX upload_resumptions_expires_idx ON upload_resumptions (expires_at);
CREATE INDEX upload_resumptions_key_idx ON upload_resumptions (restaurant_id, key_id, expires_at);

COMMENT ON TABLE upload_resumptions IS
    'Resumable uploads in progress (record assets, delivery images): what the upload is for, the SHA-256 declared at creation, the bytes durably kept and the file-store pieces that hold them. Deleted when the upload completes, is cancelled (DELETE) or expires (maintenance job upload-expiry). Never holds secrets: the id is a name, every request on it is authenticated as its key.';
COMMENT ON COLUMN upload_resumptions.id IS 'The upload resource''s name in its URL (random, 26 base32 characters); not a credential.';
COMMENT ON COLUMN upload_resumptions.key_id IS 'api_keys.id of the key that created the upload (a mobile session counts as its key); only it may resume, read or cancel the upload.';
COMMENT ON COLUMN upload_resumptions.kind IS 'asset: the file of record (collection, record_id) named object_key; image: image image_id of delivery delivery_id.';
COMMENT ON COLUMN upload_resumptions.sha256 IS 'Lowercase hex SHA-256 the client declared at creation (Repr-Digest); the completed bytes must match it or nothing is stored.';
COMMENT ON COLUMN upload_resumptions.length IS 'The whole file''s length in bytes when the client declared it (Upload-Length, or Content-Length of a creation with Upload-Complete: ?1); NULL when not yet known.';
COMMENT ON COLUMN upload_resumptions.kept IS 'Bytes durably kept in the file store (the Upload-Offset answered); only grows, by a conditional update, so two requests never both append at one offset.';
COMMENT ON COLUMN upload_resumptions.pieces IS 'File-store names of the pieces holding the kept bytes, in order (blob.Store.PieceAppend).';
COMMENT ON COLUMN upload_resumptions.expires_at IS 'Unix milliseconds after which the upload is gone (FOODSAFE_UPLOAD_RESUME_LIFETIME from creation): no longer answered, and its pieces deleted by the maintenance job.';
COMMENT ON INDEX upload_resumptions_expires_idx IS 'The maintenance job finds expired uploads in one range scan.';
COMMENT ON INDEX upload_resumptions_key_idx IS 'A creation counts the key''s open uploads on the restaurant (their number and bytes are bounded) in one range scan.';

-- +goose Down
DROP TABLE upload_resumptions;
