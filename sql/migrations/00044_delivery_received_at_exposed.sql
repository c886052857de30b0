-- +goose Up
-- The API now sends a delivery's receivedAt (epoch milliseconds as a
-- digit string, raised to occurredAt), so that late uploads can be told
-- from deliveries uploaded as checked. Only the column's comment changes:
-- the statements that read a delivery already returned received_at.
COMMENT ON COLUMN deliveries.received_at IS
    'When the service stored the delivery (its transaction''s start). Sent by the API as receivedAt, epoch milliseconds raised to occurred_at (a device clock ahead of the service''s, within the allowed skew, checked the delivery after this).';

-- +goose Down
COMMENT ON COLUMN deliveries.received_at IS 'When the service stored the delivery; not exposed by the API.';
