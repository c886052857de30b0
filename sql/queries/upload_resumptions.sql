-- name: UploadResumptionCreate :exec
-- Serves the creation of a resumable upload (a PUT with the draft's
-- headers), before its body is read. upload_resumptions_pkey.
INSERT INTO upload_resumptions (restaurant_id, id, key_id, kind, collection, record_id, object_key, delivery_id, image_id,
    content_type, sha256, length, created_at, expires_at)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(id), sqlc.arg(key_id), sqlc.arg(kind), sqlc.arg(collection), sqlc.arg(record_id),
    sqlc.arg(object_key), sqlc.arg(delivery_id), sqlc.arg(image_id), sqlc.arg(content_type), sqlc.arg(sha256),
    sqlc.narg(length), sqlc.arg(created_at), sqlc.arg(expires_at));

-- name: UploadResumptionGet :one
-- Serves HEAD, PATCH and DELETE on an upload resource: the upload of
-- this key, unexpired; another key's is no row (404).
-- upload_resumptions_pkey.
SELECT restaurant_id, id, key_id, kind, collection, record_id, object_key, delivery_id, image_id, content_type, sha256,
    length, kept, pieces, created_at, expires_at
FROM upload_resumptions
WHERE restaurant_id = sqlc.arg(restaurant_id) AND id = sqlc.arg(id) AND key_id = sqlc.arg(key_id)
  AND expires_at > sqlc.arg(now);

-- name: UploadResumptionAdvance :execrows
-- Serves every append, once its piece is durably written: the kept bytes
-- grow only from the offset the appender started at, so of two requests
-- appending at one offset (a stale one on another replica) one commits;
-- the other's piece is never listed. Also records the length once known.
-- An expired upload takes no more pieces: the expiry job may already have
-- deleted its pieces. upload_resumptions_pkey.
UPDATE upload_resumptions
SET kept = sqlc.arg(new_kept), pieces = array_append(pieces, sqlc.arg(piece)::text),
    length = COALESCE(length, sqlc.narg(length))
WHERE restaurant_id = sqlc.arg(restaurant_id) AND id = sqlc.arg(id) AND kept = sqlc.arg(old_kept)
  AND expires_at > sqlc.arg(now);

-- name: UploadResumptionsOpenOfKey :one
-- Serves the creation of a resumable upload, which the bytes and the
-- number of uploads a key already has open on the restaurant bound: how
-- many are open (unexpired), the bytes they claim (the declared length,
-- else the bytes kept) and when the first of them expires.
-- upload_resumptions_key_idx.
SELECT count(*)::bigint AS open, COALESCE(sum(COALESCE(length, kept)), 0)::bigint AS bytes,
    COALESCE(min(expires_at), 0)::bigint AS first_expiry
FROM upload_resumptions
WHERE restaurant_id = sqlc.arg(restaurant_id) AND key_id = sqlc.arg(key_id) AND expires_at > sqlc.arg(now);

-- name: UploadResumptionDelete :execrows
-- Serves completion, cancellation (DELETE) and the expiry job.
-- upload_resumptions_pkey.
DELETE FROM upload_resumptions
WHERE restaurant_id = sqlc.arg(restaurant_id) AND id = sqlc.arg(id);

-- name: UploadResumptionsExpired :many
-- Serves the maintenance job upload-expiry: a batch of the uploads whose
-- lifetime has run out, oldest first. upload_resumptions_expires_idx.
SELECT restaurant_id, id
FROM upload_resumptions
WHERE expires_at <= sqlc.arg(now)
ORDER BY expires_at
LIMIT sqlc.arg(batch);
