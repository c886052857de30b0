-- name: AssetUploadGet :one
-- Serves asset uploads (replay or conflict; before the body is read, is
-- it a replay, which the upload quota does not check?) and ingest (is the
-- asset the snapshot names verified?). asset_uploads_pkey.
SELECT restaurant_id, collection, record_id, object_key, sha256, content_type, byte_length, uploaded_at, mutation_id
FROM asset_uploads
WHERE restaurant_id = sqlc.arg(restaurant_id) AND collection = sqlc.arg(collection)
  AND record_id = sqlc.arg(record_id) AND object_key = sqlc.arg(object_key);

-- name: AssetUploadInsert :exec
-- Serves asset uploads, in the transaction that marks the record's asset
-- uploaded. asset_uploads_pkey.
INSERT INTO asset_uploads (restaurant_id, collection, record_id, object_key, sha256, content_type, byte_length,
                           uploaded_at, mutation_id)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(collection), sqlc.arg(record_id), sqlc.arg(object_key), sqlc.arg(sha256),
        sqlc.arg(content_type), sqlc.arg(byte_length), sqlc.arg(uploaded_at), sqlc.arg(mutation_id));

-- name: AssetListForRecord :one
-- Serves GET .../records/{recordId}/assets: the record's state and the
-- verified upload of the asset its current data names, in one probe of
-- records_pkey and asset_uploads_pkey. No row: no such record.
SELECT r.deleted,
       u.object_key, u.sha256, u.content_type, u.byte_length, u.uploaded_at
FROM records r
LEFT JOIN asset_uploads u
       ON u.restaurant_id = r.restaurant_id AND u.collection = r.collection AND u.record_id = r.record_id
      AND u.object_key = r.data -> 'asset' ->> 'objectKey'
WHERE r.restaurant_id = sqlc.arg(restaurant_id) AND r.collection = sqlc.arg(collection) AND r.record_id = sqlc.arg(record_id);
