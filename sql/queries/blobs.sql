-- name: BlobClaim :exec
-- Serves every upload, before its bytes are written, in a statement of its
-- own: claims the digest for FOODSAFE_BLOB_GRACE. Waits while the
-- collector holds the row (then inserts it again). blobs_pkey.
INSERT INTO blobs (sha256, last_put_at)
VALUES (sqlc.arg(sha256), sqlc.arg(now))
ON CONFLICT (sha256) DO UPDATE SET last_put_at = greatest(blobs.last_put_at, excluded.last_put_at);

-- name: BlobCandidates :many
-- Serves the blob collector: the next max_rows digests after `after`
-- whose latest upload is older than horizon, in digest order. A range of
-- blobs_pkey, filtered.
SELECT sha256
FROM blobs
WHERE sha256 > sqlc.arg(after) AND last_put_at < sqlc.arg(horizon)
ORDER BY sha256
LIMIT sqlc.arg(max_rows);

-- name: BlobLock :one
-- Serves the blob collector, first in its transaction: locks the digest's
-- claim if it is still older than horizon; no row when it was claimed
-- since, or another transaction holds it. blobs_pkey.
SELECT sha256 FROM blobs
WHERE sha256 = sqlc.arg(sha256) AND last_put_at < sqlc.arg(horizon)
FOR UPDATE SKIP LOCKED;

-- name: BlobImageReferenced :one
-- Serves the blob collector: a row when a delivery image uses the digest
-- (deliveries are never deleted: every image is live), none otherwise.
-- Written as a LIMIT rather than EXISTS so that Citus pushes it to every
-- shard as an index probe. delivery_images_sha256_idx.
SELECT 1::int AS used FROM delivery_images WHERE sha256 = sqlc.arg(sha256) LIMIT 1;

-- name: BlobAssetReferences :many
-- Serves the blob collector: every asset stored under the digest, whether
-- it is live (its record is not deleted and its current data names the
-- objectKey) and when its record last changed.
-- asset_uploads_sha256_idx, records_pkey.
SELECT u.restaurant_id, u.collection, u.record_id,
       (NOT r.deleted AND r.data -> 'asset' ->> 'objectKey' IS NOT DISTINCT FROM u.object_key)::boolean AS live,
       r.received_at
FROM asset_uploads u
JOIN records r ON r.restaurant_id = u.restaurant_id AND r.collection = u.collection AND r.record_id = u.record_id
WHERE u.sha256 = sqlc.arg(sha256)
ORDER BY u.restaurant_id, u.collection, u.record_id;

-- name: StreamLock :exec
-- Serves the blob collector: takes a stream's lock, the one ingest and
-- uploads hold while they read or write the stream's assets, so that an
-- asset cannot come back to life between the collector's check and its
-- deletion. collection_streams_pkey.
SELECT 1 FROM collection_streams
WHERE restaurant_id = sqlc.arg(restaurant_id) AND collection = sqlc.arg(collection)
FOR UPDATE;

-- name: AssetUploadsDeleteDead :execrows
-- Serves the blob collector, under the digest's and the streams' locks
-- once none of them is live: forgets the dead assets stored under the
-- digest, so that a record that comes back later asks for its file again
-- instead of pointing at deleted bytes. asset_uploads_sha256_idx.
DELETE FROM asset_uploads WHERE sha256 = sqlc.arg(sha256);

-- name: BlobDelete :exec
-- Serves the blob collector, with the bytes deleted: drops the claim.
-- blobs_pkey.
DELETE FROM blobs WHERE sha256 = sqlc.arg(sha256);
