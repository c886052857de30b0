// Command clientcheck is compiled (never run) against the Go client that
// oapi-codegen generates from the served OpenAPI document (make
// check-clients): it fails to build when what a partner's generated client
// gives regresses — record data no longer a union of the named shapes,
// numbers no longer float64, an operation's signature gone.
package main

import (
	"context"
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
}
