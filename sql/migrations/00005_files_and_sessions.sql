-- +goose Up
-- Verified uploads of record assets: bytes received, hashed and matched
-- against the client's digest. Only these are ever listed or downloadable;
-- what a device claims in data.asset is not trusted.
CREATE TABLE asset_uploads (
    restaurant_id text NOT NULL,
    collection    text NOT NULL,
    record_id     text NOT NULL,
    object_key    text NOT NULL,
    sha256        text NOT NULL CONSTRAINT asset_uploads_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content_type  text NOT NULL,
    byte_length   bigint NOT NULL CONSTRAINT asset_uploads_length_nonnegative CHECK (byte_length >= 0),
    uploaded_at   bigint NOT NULL,
    mutation_id   text NOT NULL,
    PRIMARY KEY (restaurant_id, collection, record_id, object_key),
    FOREIGN KEY (restaurant_id, collection, record_id) REFERENCES records (restaurant_id, collection, record_id)
);
SELECT foodsafe_distribute('asset_uploads', 'tenant');

COMMENT ON TABLE asset_uploads IS
    'One verified file per (record, objectKey); immutable: other bytes for the same objectKey are refused. Bytes live in blob storage under their SHA-256.';
COMMENT ON COLUMN asset_uploads.mutation_id IS 'The change (in record_changes) that marked the asset uploaded.';
COMMENT ON COLUMN asset_uploads.uploaded_at IS 'Epoch milliseconds when the upload was verified.';

-- Photographs of delivery checks, uploaded by the provider.
CREATE TABLE delivery_images (
    restaurant_id text NOT NULL,
    delivery_id   text COLLATE "C" NOT NULL,
    image_id      text COLLATE "C" NOT NULL,
    sha256        text NOT NULL CONSTRAINT delivery_images_sha256_hex CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content_type  text NOT NULL,
    byte_length   bigint NOT NULL CONSTRAINT delivery_images_length_nonnegative CHECK (byte_length >= 0),
    uploaded_at   bigint NOT NULL,
    PRIMARY KEY (restaurant_id, delivery_id, image_id),
    FOREIGN KEY (restaurant_id, delivery_id) REFERENCES deliveries (restaurant_id, id)
);
SELECT foodsafe_distribute('delivery_images', 'tenant');

COMMENT ON TABLE delivery_images IS
    'Verified delivery photographs; listed by delivery in image_id order (the primary key). Immutable per image id.';

-- Short-lived bearer tokens a device key exchanges itself for. The token
-- is stored as a digest, like keys, and acts for its key.
CREATE TABLE mobile_sessions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id    text NOT NULL CONSTRAINT mobile_sessions_public_id_format CHECK (public_id ~ '^[a-z0-9]{12,32}$'),
    token_sha256 bytea NOT NULL CONSTRAINT mobile_sessions_digest_length CHECK (octet_length(token_sha256) = 32),
    key_id       bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CONSTRAINT mobile_sessions_public_id_key UNIQUE (public_id)
);
SELECT foodsafe_distribute('mobile_sessions', 'reference');

-- Serves the foreign key and the clean-up of a key's expired sessions.
CREATE INDEX mobile_sessions_key_idx ON mobile_sessions (key_id, expires_at);

CREATE TABLE session_grants (
    session_id    bigint NOT NULL REFERENCES mobile_sessions (id) ON DELETE CASCADE,
    restaurant_id text NOT NULL,
    scope         text NOT NULL,
    PRIMARY KEY (session_id, restaurant_id, scope)
);
SELECT foodsafe_distribute('session_grants', 'reference');

COMMENT ON TABLE mobile_sessions IS
    'Mobile session tokens (fst_<public_id>.<secret>). A token is refused once expired, once its key is revoked or expired, or once the key lost any grant the token carries.';
COMMENT ON TABLE session_grants IS 'The (restaurant, scope) pairs a session token carries: always a subset of its key''s grants.';

-- +goose Down
DROP TABLE session_grants;
DROP TABLE mobile_sessions;
DROP TABLE delivery_images;
DROP TABLE asset_uploads;
