-- name: UploadQuotaUsed :one
-- Serves every file upload, before its body is read: the bytes the key
-- attached to the restaurant on the given UTC day; no row when none (or
-- only on an earlier day). upload_quota_pkey.
SELECT bytes
FROM upload_quota
WHERE restaurant_id = sqlc.arg(restaurant_id) AND key_id = sqlc.arg(key_id) AND day = sqlc.arg(day);

-- name: UploadQuotaAdd :exec
-- Serves every file upload that stored a new file, after it is stored:
-- adds its bytes to the key's count of the day, starting the count again
-- when the row is of an earlier day. A replica whose clock is still on
-- the day before adds nothing to a row already on the next.
-- upload_quota_pkey (the conflict target).
INSERT INTO upload_quota (restaurant_id, key_id, day, bytes)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(key_id), sqlc.arg(day), sqlc.arg(bytes))
ON CONFLICT (restaurant_id, key_id) DO UPDATE
SET bytes = CASE WHEN upload_quota.day = EXCLUDED.day THEN upload_quota.bytes + EXCLUDED.bytes ELSE EXCLUDED.bytes END,
    day   = EXCLUDED.day
WHERE upload_quota.day <= EXCLUDED.day;
