-- +goose Up

-- The comment of migration 00002 predates the key cache (migration 00012):
-- keys are now cached per server and dropped on every change announced on
-- the channel foodsafe_keys, so the comment says how revocation stays
-- immediate instead of "no cache".
COMMENT ON TABLE api_keys IS
    'Partner API keys (fsk_<public_id>.<secret>). Looked up by public_id, or served from a server''s key cache (FOODSAFE_KEY_CACHE), which statement triggers empty on every change through the channel foodsafe_keys; foodsafe keys revoke returns once every server has heard the change or stopped trusting its cache.';

-- +goose Down
COMMENT ON TABLE api_keys IS
    'Partner API keys (fsk_<public_id>.<secret>). Looked up by public_id on every request; no cache, so revocation is immediate on every server.';
