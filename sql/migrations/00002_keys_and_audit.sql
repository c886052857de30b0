-- +goose Up
-- Partner keys. The secret half of a key is never stored: only its SHA-256.
CREATE TABLE api_keys (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id     text NOT NULL
                  CONSTRAINT api_keys_public_id_format CHECK (public_id ~ '^[a-z0-9]{12,32}$'),
    secret_sha256 bytea NOT NULL
                  CONSTRAINT api_keys_digest_length CHECK (octet_length(secret_sha256) = 32),
    label         text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    CONSTRAINT api_keys_public_id_key UNIQUE (public_id)
);
SELECT foodsafe_distribute('api_keys', 'reference');

COMMENT ON TABLE api_keys IS
    'Partner API keys (fsk_<public_id>.<secret>). Looked up by public_id on every request; no cache, so revocation is immediate on every server.';
COMMENT ON COLUMN api_keys.public_id IS 'Public half of the key; safe to quote in support conversations and logs.';
COMMENT ON COLUMN api_keys.secret_sha256 IS 'SHA-256 of the secret half (32 random bytes), compared in constant time.';
COMMENT ON COLUMN api_keys.expires_at IS 'Optional expiry; the key answers 401 from this instant on.';
COMMENT ON COLUMN api_keys.revoked_at IS 'Set by `foodsafe keys revoke`; the key answers 401 from this instant on.';

-- One row per (key, restaurant, scope). A key with no rows answers 401.
CREATE TABLE key_grants (
    key_id        bigint NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    restaurant_id text NOT NULL REFERENCES restaurants (id),
    scope         text NOT NULL
                  CONSTRAINT key_grants_scope_format CHECK (scope ~ '^[a-z-]+:(read|write)$'),
    granted_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, restaurant_id, scope)
);
SELECT foodsafe_distribute('key_grants', 'reference');

-- Serves the restaurants_id foreign key and "which keys reach restaurant X".
CREATE INDEX key_grants_restaurant_idx ON key_grants (restaurant_id);

COMMENT ON TABLE key_grants IS
    'Scopes a key holds per restaurant. Scope names are validated against the catalog by the application; the CHECK only guards the shape.';

-- Audit trail: one row per request except successful health probes.
-- Written off the request path in batches (COPY).
CREATE TABLE audit_events (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at   timestamptz NOT NULL,
    key_public_id text,
    restaurant_id text,
    method        text NOT NULL,
    route         text NOT NULL,
    status        smallint NOT NULL,
    request_id    text NOT NULL,
    client_ip     inet,
    outcome       text
);

CREATE INDEX audit_events_occurred_idx ON audit_events (occurred_at DESC, id DESC);
CREATE INDEX audit_events_key_idx ON audit_events (key_public_id, occurred_at DESC, id DESC)
    WHERE key_public_id IS NOT NULL;
CREATE INDEX audit_events_restaurant_idx ON audit_events (restaurant_id, occurred_at DESC, id DESC)
    WHERE restaurant_id IS NOT NULL;

COMMENT ON TABLE audit_events IS
    'Who called what: every request except successful health probes. Never holds secrets: keys appear by public id only.';
COMMENT ON COLUMN audit_events.key_public_id IS
    'Public id of the key (or of the key behind a session token). On a failed authentication, the public id the caller presented, if the credential was well-formed.';
COMMENT ON COLUMN audit_events.restaurant_id IS 'restaurantId path parameter as requested, whether or not the key was granted it.';
COMMENT ON COLUMN audit_events.route IS 'Route template (e.g. /v1/restaurants/:restaurantId/deliveries), "(unmatched)" for unknown paths.';
COMMENT ON COLUMN audit_events.outcome IS 'Why authentication failed (missing, malformed, unknown, revoked, expired, no-grants), or rate-limited; null otherwise.';

-- +goose Down
DROP TABLE audit_events;
DROP TABLE key_grants;
DROP TABLE api_keys;
