-- +goose Up
-- The service records routes in the OpenAPI document's form from this
-- release on; older rows keep the form they were written in.
COMMENT ON COLUMN audit_events.route IS
    'Route template in the OpenAPI document''s form (e.g. /v1/restaurants/{restaurantId}/deliveries; rows written before migration 00007 say :restaurantId), "(unmatched)" for unknown paths.';

-- +goose Down
COMMENT ON COLUMN audit_events.route IS 'Route template (e.g. /v1/restaurants/:restaurantId/deliveries), "(unmatched)" for unknown paths.';
