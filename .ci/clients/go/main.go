// Command clientcheck is compiled (never run) against the Go client that
// oapi-codegen generates from the served OpenAPI document (make
// check-clients): it fails to build when what a partner's generated client
// gives regresses — a record no longer narrowed to its collection's type
// by `collection` (or a feed item by `stream`), a typed snapshot no longer
// a per-collection ingest, numbers no longer float64, an operation's
// signature gone, an upload without the objectKey it needs or taking a
// collection that carries no files. It never looks at which members a
// value has to learn its type.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"foodsafe.example/clientcheck/client"
)

// describe narrows an envelope by its collection (the union's
// discriminator) to that collection's typed record.
func describe(e client.Envelope) string {
	v, err := e.ValueByDiscriminator()
	if err != nil {
		panic(err)
	}
	switch r := v.(type) {
	case client.AreasEnvelope:
		if r.Data == nil {
			return r.Id + " deleted"
		}
		return r.Data.Name
	case client.TemperatureRecordsEnvelope:
		if r.Data == nil {
			return r.Id + " deleted"
		}
		var value float64 = r.Data.Value // a float32 would turn 5.6 into 5.599999904632568
		return fmt.Sprintf("%s: %v %s", r.Data.EquipmentId, value, r.Data.Unit)
	case client.CleaningTaskPicturesEnvelope:
		if r.Data == nil {
			return r.Id + " deleted"
		}
		return r.Data.Asset.ObjectKey + " " + string(r.Data.Asset.Status)
	}
	return "another collection"
}

func main() {
	ctx := context.Background()
	c, err := client.NewClientWithResponses("http://127.0.0.1:8080")
	if err != nil {
		panic(err)
	}
	// Walk areas and read each record through its typed shape.
	limit := client.Limit(100)
	page, err := c.WalkRecordsWithResponse(ctx, "bistro-42", client.WalkRecordsParamsCollection("areas"),
		&client.WalkRecordsParams{Limit: &limit})
	if err != nil || page.JSON200 == nil {
		panic(err)
	}
	for _, e := range page.JSON200.Data {
		fmt.Println(describe(e))
	}

	// The records feed: `stream` narrows an item to a delivery or to one
	// collection's record.
	feedLimit := client.FeedLimit(500)
	feed, err := c.WalkAllRecordsWithResponse(ctx, &client.WalkAllRecordsParams{Limit: &feedLimit})
	if err != nil || feed.JSON200 == nil {
		panic(err)
	}
	for _, item := range feed.JSON200.Data {
		v, err := item.ValueByDiscriminator()
		if err != nil {
			panic(err)
		}
		switch it := v.(type) {
		case client.DeliveriesFeedItem:
			fmt.Println(it.Delivery.Supplier.Name)
		case client.AreasFeedItem:
			if it.Record.Data != nil {
				fmt.Println(it.Record.Data.Name)
			}
		}
	}

	// Build a typed temperature-records snapshot and send it with the
	// per-collection ingest operation, whose body is a
	// TemperatureRecordsSnapshot: its data is a TemperatureRecordsData.
	reading := client.TemperatureRecordsData{EquipmentId: "fridge-1", Shift: "MORNING", Timestamp: "1763700000000",
		Unit: "C", Value: 5.6}
	var body client.TemperatureRecordsSnapshot // live, or a tombstone
	if err := body.FromTemperatureRecordsLiveSnapshot(client.TemperatureRecordsLiveSnapshot{Id: "t-1", RestaurantId: "bistro-42",
		MutationId: "m-1", PayloadVersion: 1, CapturedAt: "1763700000000", Deleted: false, Data: reading}); err != nil {
		panic(err)
	}
	r, err := c.IngestTemperatureRecordsSnapshotWithResponse(ctx, "bistro-42", "t-1", "m-1",
		&client.IngestTemperatureRecordsSnapshotParams{IdempotencyKey: "m-1"}, body)
	if err != nil {
		panic(err)
	}
	fmt.Println(r.StatusCode())

	// Upload the photo a cleaning-task-pictures record's data.asset names:
	// objectKey (a required query parameter) says which file the bytes are,
	// and only the three collections with files are a collection here.
	photo := []byte{0xff, 0xd8, 0xff, 0xe0}
	sum := sha256.Sum256(photo)
	up, err := c.UploadRecordAssetWithBodyWithResponse(ctx, "bistro-42", client.UploadRecordAssetParamsCollectionCleaningTaskPictures,
		"pic-1", &client.UploadRecordAssetParams{ObjectKey: "photos/pic-1.jpg",
			ReprDigest: "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"}, "image/jpeg", bytes.NewReader(photo))
	if err != nil {
		panic(err)
	}
	if up.JSON200 != nil {
		e, err := up.JSON200.Data.AsEnvelope()
		if err != nil {
			panic(err)
		}
		fmt.Println(describe(e))
	}
}
