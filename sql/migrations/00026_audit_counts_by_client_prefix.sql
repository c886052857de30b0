-- +goose Up

-- audit_counts keys on the client's address prefix instead of the
-- address (FOODSAFE_CLIENT_PREFIX_IPV4 and _IPV6: an IPv4 address, an
-- IPv6 /64 by default), so an IPv6 client using a new address of its /64
-- per request adds no row per request; and each server adds at most
-- FOODSAFE_AUDIT_COUNT_ROWS rows a minute, whatever the number of
-- clients: the shapes written first in a minute (heaviest first at each
-- flush) keep their names, and the rest of the minute's requests are
-- counted in one row (client ::/0, method other, route "(others)",
-- status 0). Only the comments change: inet holds a prefix as it holds an
-- address, and rows already written (each a single address) read the same.
COMMENT ON TABLE audit_counts IS
    'Requests audited by shape: refused before authentication, rate limited, unmatched, documentation, refused downloads. One row per minute, client (address prefix), method, route, status, outcome and key, with the number of requests; servers add to it. Each server adds at most FOODSAFE_AUDIT_COUNT_ROWS rows a minute: beyond, the minute''s requests are counted in one row of the rest (client ::/0, route "(others)"). Partitioned by day of minute (UTC): audit_counts_pYYYYMMDD, created and dropped with audit_events''s partitions. Never holds secrets.';
COMMENT ON COLUMN audit_counts.client_ip IS 'The client: its address prefix (FOODSAFE_CLIENT_PREFIX_IPV4, _IPV6; an IPv4 address, an IPv6 /64 by default), behind FOODSAFE_TRUSTED_PROXIES of the address they forwarded; ::/128 when none was known; ::/0 in the row of the rest.';
COMMENT ON COLUMN audit_counts.route IS 'Route template in the OpenAPI document''s form, "(unmatched)" for unknown paths, "(others)" in the row of the rest.';
COMMENT ON COLUMN audit_counts.status IS 'The answer''s status; 0 in the row of the rest.';

-- +goose Down
COMMENT ON TABLE audit_counts IS
    'Requests audited by shape: refused before authentication, rate limited, unmatched, documentation, refused downloads. One row per minute, client IP, method, route, status, outcome and key, with the number of requests; servers add to it. Partitioned by day of minute (UTC): audit_counts_pYYYYMMDD, created and dropped with audit_events''s partitions. Never holds secrets.';
COMMENT ON COLUMN audit_counts.client_ip IS 'The client address (behind FOODSAFE_TRUSTED_PROXIES, the one they forwarded); :: when none was known.';
COMMENT ON COLUMN audit_counts.route IS 'Route template in the OpenAPI document''s form, "(unmatched)" for unknown paths.';
COMMENT ON COLUMN audit_counts.status IS NULL;
