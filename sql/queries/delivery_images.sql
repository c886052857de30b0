-- name: DeliveryImageInsert :one
-- Serves PUT .../deliveries/{deliveryId}/images/{imageId}. No row when the
-- image id exists already (replay or conflict, decided by the caller);
-- a missing delivery fails the foreign key. delivery_images_pkey.
INSERT INTO delivery_images (restaurant_id, delivery_id, image_id, sha256, content_type, byte_length, uploaded_at)
VALUES (sqlc.arg(restaurant_id), sqlc.arg(delivery_id), sqlc.arg(image_id), sqlc.arg(sha256), sqlc.arg(content_type),
        sqlc.arg(byte_length), sqlc.arg(uploaded_at))
ON CONFLICT (restaurant_id, delivery_id, image_id) DO NOTHING
RETURNING restaurant_id, delivery_id, image_id, sha256, content_type, byte_length, uploaded_at;

-- name: DeliveryImageGet :one
-- Serves image upload replays, and before an upload's body is read, is it
-- a replay (which the upload quota does not check)? delivery_images_pkey.
SELECT restaurant_id, delivery_id, image_id, sha256, content_type, byte_length, uploaded_at
FROM delivery_images
WHERE restaurant_id = sqlc.arg(restaurant_id) AND delivery_id = sqlc.arg(delivery_id) AND image_id = sqlc.arg(image_id);

-- name: DeliveryImageList :many
-- Serves GET .../deliveries/{deliveryId}/images: the delivery's existence
-- and its images in image id order, in one statement (no row: no such
-- delivery; one row with null image fields: no images).
-- deliveries_pkey, then a range of delivery_images_pkey.
SELECT d.id AS delivery_id, i.image_id, i.sha256, i.content_type, i.byte_length, i.uploaded_at
FROM deliveries d
LEFT JOIN delivery_images i ON i.restaurant_id = d.restaurant_id AND i.delivery_id = d.id
WHERE d.restaurant_id = sqlc.arg(restaurant_id) AND d.id = sqlc.arg(delivery_id)
ORDER BY i.image_id;
