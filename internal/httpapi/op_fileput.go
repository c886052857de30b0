package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
)

// The two upload endpoints: each checks what it uploads to, then takes
// the file in one PUT (op_files.go) or as a resumable upload
// (op_resumable.go), and attaches it the same way.

// assetPut is the "device finishes sending" step of spec 3:
// PUT /v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/asset?objectKey=.
func (a *API) assetPut(c *gin.Context) (err error) {
	defer closeAfterRefusal(c, &err)
	k := recordKey(restParams{c})
	if err := fileCollection(k.Collection); err != nil {
		return err
	}
	if !ids.Valid(k.RecordID) {
		return apperr.ErrNotFound
	}
	objectKey, err := a.objectKeyParam(c)
	if err != nil {
		return err
	}
	// Refuse before reading megabytes for a record that cannot take them.
	if err := a.store.AssetUploadCheck(c.Request.Context(), k, objectKey); err != nil {
		return err
	}
	t := store.Resumption{Kind: store.ResumeAsset, RestaurantID: k.RestaurantID, Collection: k.Collection, RecordID: k.RecordID,
		ObjectKey: objectKey}
	if on, complete, err := resumableCreation(c); err != nil || on {
		if err != nil {
			return err
		}
		return a.resumeCreate(c, t, complete)
	}
	obj, ct, err := a.receiveFile(c, metrics.WriteAsset, k.Collection, false, a.uploadStored(t))
	if err != nil {
		return err
	}
	return a.applyUpload(c, t, obj, ct)
}

// deliveryImagePut is the provider's image upload:
// PUT /v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId/images/:imageId.
func (a *API) deliveryImagePut(c *gin.Context) (err error) {
	defer closeAfterRefusal(c, &err)
	k := store.ImageKey{DeliveryKey: store.DeliveryKey{RestaurantID: c.Param("restaurantId"), DeliveryID: c.Param("deliveryId")},
		ImageID: c.Param("imageId")}
	if !ids.Valid(k.DeliveryID) {
		return apperr.ErrNotFound
	}
	if !ids.Valid(k.ImageID) {
		return invalidID("imageId")
	}
	if _, err := a.store.DeliveryGet(c.Request.Context(), k.DeliveryKey); err != nil {
		return err
	}
	t := store.Resumption{Kind: store.ResumeImage, RestaurantID: k.RestaurantID, DeliveryID: k.DeliveryID, ImageID: k.ImageID}
	if on, complete, err := resumableCreation(c); err != nil || on {
		if err != nil {
			return err
		}
		return a.resumeCreate(c, t, complete)
	}
	obj, ct, err := a.receiveFile(c, metrics.WriteDeliveryImage, "", true, a.uploadStored(t))
	if err != nil {
		return err
	}
	return a.applyUpload(c, t, obj, ct)
}
