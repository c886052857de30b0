// Command clientcheck is compiled (never run) against the Go client that
// oapi-codegen generates from the served OpenAPI document (make
// check-clients): it fails to build when what a partner's generated client
// gives regresses — record data no longer a union of the named shapes,
// numbers no longer float64, an operation's signature gone, an upload
// without the objectKey it needs.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"foodsafe.example/clientcheck/client"
)

func main() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses("http://127.0.0.1:8080")
	if err != nil {
		panic(err)
	}
	// Walk areas and read each record's name through its typed shape.
	limit := client.Limit(100)
	page, err := c.WalkRecordsWithResponse(ctx, "bistro-42", client.WalkRecordsParamsCollection("areas"),
		&client.WalkRecordsParams{Limit: &limit})
	if err != nil || page.JSON200 == nil {
		panic(err)
	}
	for _, e := range page.JSON200.Data {
		if e.Collection != client.EnvelopeCollectionAreas || e.Data == nil {
			continue
		}
		areas, err := e.Data.AsAreasData()
		if err != nil {
			panic(err)
		}
		var name string = areas.Name
		fmt.Println(e.Id, name)
	}

	// Build a temperature-records ingest body; the reading is a float64
	// (a float32 would turn 5.6 into 5.599999904632568).
	var value float64 = 5.6
	reading := client.TemperatureRecordsData{EquipmentId: "fridge-1", Shift: "MORNING", Timestamp: "1763700000000",
		Unit: "C", Value: value}
	body := client.IngestSnapshot{Id: "t-1", RestaurantId: "bistro-42", MutationId: "m-1", PayloadVersion: 1,
		CapturedAt: "1763700000000", Deleted: false, Data: reading}
	r, err := c.IngestSnapshotWithResponse(ctx, "bistro-42", client.IngestSnapshotParamsCollection("temperature-records"),
		"t-1", "m-1", &client.IngestSnapshotParams{IdempotencyKey: "m-1"}, body)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.StatusCode())

	// Upload the photo a cleaning-task-pictures record's data.asset names:
	// objectKey (a required query parameter) says which file the bytes are.
	photo := []byte{0xff, 0xd8, 0xff, 0xe0}
	sum := sha256.Sum256(photo)
	up, err := c.UploadRecordAssetWithBodyWithResponse(ctx, "bistro-42", client.UploadRecordAssetParamsCollection("cleaning-task-pictures"),
		"pic-1", &client.UploadRecordAssetParams{ObjectKey: "photos/pic-1.jpg",
			ReprDigest: "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"}, "image/jpeg", bytes.NewReader(photo))
	if err != nil {
		panic(err)
	}
	if up.JSON200 != nil {
		e, err := up.JSON200.Data.AsEnvelope()
		if err != nil || e.Data == nil {
			panic(err)
		}
		picture, err := e.Data.AsCleaningTaskPicturesData()
		if err != nil {
			panic(err)
		}
		fmt.Println(picture.Asset.ObjectKey, picture.Asset.Status)
	}
}
