// Package examples holds what the OpenAPI document's examples name: one
// record of each collection, a delivery with its photograph and a file.
// The demo loads all of it (internal/demo), so every example request of
// the document is a request that succeeds against the demo data: a read
// finds what it names, a write replays what the demo wrote. The values
// are fixed (timestamps included), so the document does not change from
// one start to the next.
package examples

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync"
	"time"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// Restaurant is the demo restaurant, which every example names.
const Restaurant = "demo-bistro"

// Since is when the demo restaurant's capture starts: before every
// example's capturedAt, so the examples of event collections are held
// (the service keeps no backfill).
var Since = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)

// The examples' times: epoch milliseconds as the wire writes them.
const (
	// CapturedAt is when every example record was captured (2025-11-21 08:00 UTC).
	CapturedAt = "1763712000000"
	at         = "1763711700000" // the events' own timestamp, five minutes before
	later      = "1763717400000" // 95 minutes after at
)

// Record is an example record: its collection, id, the mutation that
// wrote it, and its data.
type Record struct {
	Collection, ID, MutationID string
	Data                       map[string]any
}

// Snapshot is the ingest body that writes the record.
func (r Record) Snapshot() map[string]any {
	return map[string]any{"id": r.ID, "restaurantId": Restaurant, "mutationId": r.MutationID, "payloadVersion": 1,
		"capturedAt": CapturedAt, "sourceVersion": nil, "deleted": false, "data": r.Data}
}

// FileCollection, FileRecord: the example record whose file the upload
// and asset examples name (a drive-files document).
const (
	FileCollection = "drive-files"
	FileRecord     = "doc-cleaning-plan"
	FileObjectKey  = "drive/demo-bistro/cleaning-plan.txt"
	FileType       = "text/plain"
)

// File is the bytes of the example record's file.
func File() []byte {
	return []byte("Cleaning plan - Demo Bistro\nDaily: work surfaces, slicer, floors.\nWeekly: hood, cold room walls.\n")
}

// records is one example per collection, by collection name.
var records = func() map[string]Record {
	asset := func(key string) map[string]any { return map[string]any{"objectKey": key, "status": "pending"} }
	data := map[string]map[string]any{
		"restaurants": {"name": "Demo Bistro", "address": "12 Rue des Halles, 75001 Paris", "closingDays": []any{"SUNDAY"},
			"companyName": "Demo Bistro SAS", "preferredLanguage": "fr", "multiArea": true},
		"users": {"lastName": "Moreau", "firstName": "Léa", "email": "lea@demo-bistro.example",
			"modules": []any{"temperatures", "deliveries"}, "isDeleted": false},
		"areas":     {"name": "Walk-in freezer", "isDeleted": false},
		"equipment": {"index": 3, "type": "FREEZER", "name": "Walk-in freezer", "isDeleted": false, "min": -25, "max": -18, "areaId": "area-6", "state": "OK"},
		"sensors":   {"macAddress": "C4:7C:8D:00:00:04", "sensorEquipmentId": "equipment-4"},
		"temperature-records": {"timestamp": at, "value": 3.5, "unit": "°C", "shift": "MORNING", "equipmentId": "equipment-1",
			"userId": "user-1"},
		"temperature-readings": {"timestamp": at, "value": -19.5, "unit": "°C", "equipmentId": "equipment-4"},
		"suppliers": {"name": "Fromagerie Dubois", "isDeleted": false,
			"contactMethods": []any{map[string]any{"type": "email", "value": "orders@fromagerie-dubois.example"}}},
		"products":              {"name": "Comté 18 months", "isDeleted": false},
		"preparations":          {"name": "Pesto", "lifespan": 4, "isDeleted": false, "allergens": []any{"fruits à coque"}},
		"cleaning-tasks":        {"index": 3, "name": "Defrost the walk-in freezer", "areaId": "area-6", "recurrence": 30, "isDeleted": false},
		"cleaning-task-records": {"timestamp": at, "cleaningTaskId": "task-2", "userId": "user-3"},
		"cleaning-task-pictures": {"timestamp": at, "cleaningTaskRecordId": "clean-20251121", "groupId": "proof-20251121",
			"asset": asset("cleaning/picture-20251121.png")},
		"cooling": {"timestamp": at, "product": "Beef stew", "beginDate": at, "beginTemperature": 68, "endDate": later,
			"endTemperature": 8, "userId": "user-2"},
		"freezing": {"timestamp": at, "product": "Pizza dough", "beginDate": at, "beginTemperature": 20, "endDate": later,
			"endTemperature": -18},
		"reheating": {"timestamp": at, "product": "Soup", "beginDate": at, "beginTemperature": 4, "endDate": later,
			"endTemperature": 74},
		"transport": {"timestamp": at, "product": "Lunch trays", "departureLocation": "Central kitchen", "departureTime": at,
			"departureTemperature": 67, "arrivalLocation": "School canteen", "arrivalTime": later, "arrivalTemperature": 63},
		"fryer-equipment": {"index": 1, "name": "Fryer right", "isDeleted": false, "areaId": "area-1", "oilCapacity": 8,
			"capacityUnit": "L", "polarCompoundsWarning": 20, "polarCompoundsLimit": 24, "maxOilTemperature": 180, "temperatureUnit": "°C"},
		"fryer-checks": {"timestamp": at, "fryerEquipmentId": "fryer-1", "oilQuality": "amber", "testValue": 18.5, "testUnit": "%TPM",
			"oilTemperature": 172, "temperatureUnit": "°C", "decision": "left", "userId": "user-2"},
		"cooking-equipment": {"index": 1, "type": "OVEN", "name": "Pizza oven", "isDeleted": false, "areaId": "area-1", "min": 63, "unit": "°C"},
		"cooking-temperature-records": {"timestamp": at, "value": 75, "unit": "°C", "shift": "LUNCH", "cookingEquipmentId": "oven-1",
			"userId": "user-2"},
		"surface-analyses": {"timestamp": at, "surface": "Slicer blade", "areaId": "area-1", "method": "ATP swab", "result": "40 RLU",
			"passed": true, "userId": "user-1"},
		"traceability-labels": {"timestamp": at, "supplier": "Fromagerie Dubois", "commentary": "Opened 2025-11-21",
			"groupId": "run-20251121", "userId": "user-1", "asset": asset("labels/label-20251121.png")},
		FileCollection: {"s3Key": FileObjectKey, "name": "Cleaning plan.txt", "sizeBytes": len(File()), "contentType": FileType,
			"asset": asset(FileObjectKey)},
	}
	ids := map[string]string{
		"restaurants": Restaurant, "users": "user-4", "areas": "area-6", "equipment": "equipment-4", "sensors": "sensor-4",
		"temperature-records": "temp-20251121-MORNING-e1", "temperature-readings": "reading-20251121-e4", "suppliers": "supplier-4",
		"products": "product-5", "preparations": "preparation-4", "cleaning-tasks": "task-4", "cleaning-task-records": "clean-20251121",
		"cleaning-task-pictures": "picture-20251121", "cooling": "cooling-20251121", "freezing": "freezing-20251121",
		"reheating": "reheating-20251121", "transport": "transport-20251121", "fryer-equipment": "fryer-2",
		"fryer-checks": "fryer-check-20251121", "cooking-equipment": "oven-2", "cooking-temperature-records": "cooking-20251121",
		"surface-analyses": "swab-20251121", "traceability-labels": "label-20251121", FileCollection: FileRecord,
	}
	out := map[string]Record{}
	for _, c := range catalog.Collections {
		id := ids[c.Name]
		out[c.Name] = Record{Collection: c.Name, ID: id, MutationID: "example." + c.Name + "." + id, Data: data[c.Name]}
	}
	return out
}()

// Of is the example record of a collection.
func Of(collection string) Record {
	r, ok := records[collection]
	if !ok {
		panic("examples: no collection " + collection)
	}
	return r
}

// Records are the example records, one per collection in catalog order.
func Records() []Record {
	out := make([]Record, 0, len(catalog.Collections))
	for _, c := range catalog.Collections {
		out = append(out, records[c.Name])
	}
	return out
}

// The example delivery and its photograph.
const (
	DeliveryID = "delivery-20251121"
	ImageID    = "photo-1"
	ImageType  = "image/png"
	// OccurredAt is the delivery's time (2025-11-21 07:30 UTC); the
	// examples of the delivery window surround it.
	OccurredAt = "1763710200000"
	WindowFrom = "1763683200000" // 2025-11-21 00:00 UTC
	WindowTo   = "1763769599999" // 2025-11-21 23:59:59.999 UTC
)

// Delivery is the example delivery's body, as the provider sends it.
func Delivery() map[string]any {
	return map[string]any{
		"id": DeliveryID, "occurredAt": OccurredAt, "isCompliant": false,
		"supplier": map[string]any{"id": "supplier-1", "name": "Fresh Farm Ltd"},
		"temperatureRecords": []any{
			map[string]any{"product": "Chicken breast", "lotNumber": "L-2211", "unit": "°C", "value": 3.5},
			map[string]any{"product": "Natural yoghurt", "lotNumber": "Y-9", "unit": "°C", "value": 6.8},
		},
		"nonComplianceReasons": []any{"Yoghurt above 6 °C"}, "correctiveActions": []any{"Refused the yoghurt crate"},
		"commentary": "Driver late", "imageCount": 1,
	}
}

// Photo is the example delivery's photograph: a small PNG, the same bytes
// on every call.
var Photo = sync.OnceValue(func() []byte {
	const w, h = 24, 16
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{200, 60, 60, 255}
			if (x+y)/4%2 == 0 {
				c = color.RGBA{100, 30, 30, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory cannot fail
	return buf.Bytes()
})

// Digest is the Repr-Digest of b (RFC 9530).
func Digest(b []byte) string {
	d := sha256.Sum256(b)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(d[:]) + ":"
}

// SHA256 is b's SHA-256 as 64 lowercase hex characters.
func SHA256(b []byte) string {
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
