// Package demo fills a demo restaurant with realistic records in every
// collection, deliveries with photographs, and files, so a newcomer can call
// the API at once. It loads everything through the service's own write API
// (the HTTP handler, in process), so demo data passes exactly the
// validation, ingest and upload rules real devices meet; loading twice
// replays instead of duplicating.
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
	"github.com/foodsafe/foodsafe/internal/store"
)

// RestaurantID is the demo restaurant.
const RestaurantID = examples.Restaurant

// Summary says what was loaded.
type Summary struct {
	Records    int
	Tombstones int
	Deliveries int
	Files      int
}

// loader drives the write API with a temporary device key.
type loader struct {
	h    http.Handler
	key  string
	now  time.Time
	rnd  *rand.Rand
	sum  Summary
	seen map[string]int // record id -> versions written
}

// ErrLoaded reports that the demo restaurant already has its data.
var ErrLoaded = errors.New("the demo data is already loaded")

// historyDays is how far back the demo's records go.
const historyDays = 120

// Load writes the demo data through h (the service's handler) and returns
// a summary. The store is used only to enable the restaurant, to see
// whether the data is there already (timestamps are relative to now, so a
// second load would conflict rather than replay), and to issue and revoke
// the temporary write key.
func Load(ctx context.Context, st *store.Store, h http.Handler, now time.Time) (Summary, error) {
	// Capture "started" before the oldest demo record (120 days back, or
	// the document's examples, if older), so the history is held: the
	// service refuses backfill of events.
	since := now.AddDate(0, 0, -historyDays-1)
	if examples.Since.Before(since) {
		since = examples.Since
	}
	if _, err := st.RestaurantAdd(ctx, RestaurantID, store.RestaurantChange{Name: ptr("Demo Bistro"), EnabledAt: &since}); err != nil {
		return Summary{}, err
	}
	switch _, err := st.RecordGet(ctx, store.RecordKey{RestaurantID: RestaurantID, Collection: "restaurants", RecordID: RestaurantID}); {
	case err == nil:
		return Summary{}, ErrLoaded
	case !apperr.Is(err, apperr.NotFound):
		return Summary{}, err
	}
	writes := []string{catalog.DeliveriesWrite, catalog.DeliveryImagesWrite}
	for _, c := range catalog.Collections {
		writes = append(writes, c.WriteScope())
	}
	k := auth.NewKey()
	if _, err := st.KeyCreate(ctx, k, "demo loader (revoked after loading)", nil, []auth.Grant{{RestaurantID: RestaurantID, Scopes: writes}}); err != nil {
		return Summary{}, err
	}
	defer st.KeyRevoke(context.WithoutCancel(ctx), k.PublicID) //nolint:errcheck // best effort; the key is never shown
	l := &loader{h: h, key: k.Full, now: now.Truncate(time.Minute), rnd: rand.New(rand.NewPCG(42, 2026)), seen: map[string]int{}}
	for _, step := range []func() error{l.examples, l.reference, l.temperatures, l.cycles, l.cleaning, l.fryers, l.labelsAndFiles, l.deliveries, l.profile} {
		if err := step(); err != nil {
			return l.sum, err
		}
	}
	return l.sum, nil
}

// ReadKey issues a key holding every read scope of the demo restaurant.
func ReadKey(ctx context.Context, st *store.Store) (string, error) {
	reads := []string{catalog.DeliveriesRead, catalog.DeliveryImagesRead}
	for _, c := range catalog.Collections {
		reads = append(reads, c.ReadScope())
	}
	k := auth.NewKey()
	_, err := st.KeyCreate(ctx, k, "demo reader", nil, []auth.Grant{{RestaurantID: RestaurantID, Scopes: reads}})
	return k.Full, err
}

func ptr[T any](v T) *T { return &v }

// ms is epoch milliseconds as the wire's digit string.
func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func (l *loader) send(method, path, contentType string, body []byte, headers map[string]string) error {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+l.key)
	req.Header.Set("Content-Type", contentType)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	l.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("demo: %s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return nil
}

// put ingests a live snapshot (or a tombstone when data is nil) of a record.
func (l *loader) put(collection, id string, captured time.Time, data map[string]any) error {
	l.seen[collection+"/"+id]++
	mutation := fmt.Sprintf("demo.%s.%s.v%d", collection, id, l.seen[collection+"/"+id])
	if captured.After(l.now) {
		captured = l.now // nothing is captured in the future
	}
	body := map[string]any{"id": id, "restaurantId": RestaurantID, "mutationId": mutation, "payloadVersion": 1,
		"capturedAt": ms(captured), "sourceVersion": nil, "deleted": data == nil}
	if data != nil {
		body["data"] = data
		l.sum.Records++
	} else {
		l.sum.Tombstones++
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	path := fmt.Sprintf("/v1/ingest/restaurants/%s/collections/%s/records/%s/mutations/%s", RestaurantID, collection, id, mutation)
	return l.send(http.MethodPut, path, "application/json", b, map[string]string{"Idempotency-Key": mutation})
}

// examples writes what the OpenAPI document's examples name, exactly as
// its example requests send it (internal/examples): one record of each
// collection, the file of the drive-files one, a delivery and its
// photograph. Every example request then succeeds against the demo: the
// writes replay.
func (l *loader) examples() error {
	for _, r := range examples.Records() {
		b, err := json.Marshal(r.Snapshot())
		if err != nil {
			return err
		}
		path := fmt.Sprintf("/v1/ingest/restaurants/%s/collections/%s/records/%s/mutations/%s", RestaurantID, r.Collection, r.ID, r.MutationID)
		if err := l.send(http.MethodPut, path, "application/json", b, map[string]string{"Idempotency-Key": r.MutationID}); err != nil {
			return err
		}
		l.seen[r.Collection+"/"+r.ID]++
		l.sum.Records++
	}
	if err := l.upload(examples.FileCollection, examples.FileRecord, examples.FileObjectKey, examples.FileType, examples.File()); err != nil {
		return err
	}
	b, err := json.Marshal(examples.Delivery())
	if err != nil {
		return err
	}
	if err := l.send(http.MethodPut, "/v1/ingest/restaurants/"+RestaurantID+"/deliveries/"+examples.DeliveryID, "application/json", b, nil); err != nil {
		return err
	}
	l.sum.Deliveries++
	photo := examples.Photo()
	l.sum.Files++
	return l.send(http.MethodPut, fmt.Sprintf("/v1/ingest/restaurants/%s/deliveries/%s/images/%s", RestaurantID, examples.DeliveryID, examples.ImageID),
		examples.ImageType, photo, map[string]string{"Repr-Digest": digest(photo)})
}

// upload sends the bytes of the file objectKey of a record's asset.
func (l *loader) upload(collection, id, objectKey, contentType string, b []byte) error {
	l.sum.Files++
	path := fmt.Sprintf("/v1/ingest/restaurants/%s/collections/%s/records/%s/asset?objectKey=%s", RestaurantID, collection, id,
		url.QueryEscape(objectKey))
	return l.send(http.MethodPut, path, contentType, b, map[string]string{"Repr-Digest": digest(b)})
}

func digest(b []byte) string {
	d := sha256.Sum256(b)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(d[:]) + ":"
}

func (l *loader) day(ago int, hour, minute int) time.Time {
	d := l.now.AddDate(0, 0, -ago)
	t := time.Date(d.Year(), d.Month(), d.Day(), hour, minute, 0, 0, time.UTC)
	// Today's later checks have not happened yet: the service refuses
	// records captured in the future, so they are dated a little before now.
	if limit := l.now.Add(-time.Duration(24*60-hour*60-minute) * time.Second); t.After(limit) {
		return limit
	}
	return t
}

// steps are batched by theme; each returns the first failure.
func run(fs ...func() error) error {
	for _, f := range fs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) reference() error {
	start := l.day(historyDays, 9, 0)
	var steps []func() error
	for i, u := range [][3]string{{"Martin", "Claire", "claire@demo-bistro.example"}, {"Nguyen", "Tom", "tom@demo-bistro.example"},
		{"Diallo", "Awa", "awa@demo-bistro.example"}} {
		id := fmt.Sprintf("user-%d", i+1)
		steps = append(steps, func() error {
			return l.put("users", id, start, map[string]any{"lastName": u[0], "firstName": u[1], "email": u[2],
				"modules": []any{"temperatures", "cleaning", "deliveries"}, "isDeleted": i == 2})
		})
	}
	for i, a := range []string{"Kitchen", "Cold room", "Bar", "Pastry corner", "Terrace"} {
		id := fmt.Sprintf("area-%d", i+1)
		steps = append(steps, func() error { return l.put("areas", id, start, map[string]any{"name": a, "isDeleted": false}) })
	}
	steps = append(steps, func() error { return l.put("areas", "area-5", l.day(30, 10, 0), nil) }) // the terrace was removed
	for i, e := range []struct {
		typ, name string
		min, max  float64
	}{{"FRIDGE", "Fridge 1", 0, 4}, {"FRIDGE", "Fridge 2", 0, 4}, {"FREEZER", "Freezer", -25, -18}} {
		id := fmt.Sprintf("equipment-%d", i+1)
		steps = append(steps, func() error {
			return l.put("equipment", id, start, map[string]any{"index": i, "type": e.typ, "name": e.name, "isDeleted": false,
				"min": e.min, "max": e.max, "areaId": "area-2", "equipmentSensorId": fmt.Sprintf("sensor-%d", i+1), "state": "OK"})
		})
		steps = append(steps, func() error {
			return l.put("sensors", fmt.Sprintf("sensor-%d", i+1), start, map[string]any{
				"macAddress": fmt.Sprintf("C4:7C:8D:00:00:%02X", i+1), "sensorEquipmentId": id})
		})
	}
	for i, s := range []string{"Fresh Farm Ltd", "Boulangerie Martin", "Marée du Jour"} {
		steps = append(steps, func() error {
			return l.put("suppliers", fmt.Sprintf("supplier-%d", i+1), start, map[string]any{"name": s, "isDeleted": false,
				"contactMethods": []any{map[string]any{"type": "phone", "value": fmt.Sprintf("+33 1 00 00 00 %02d", i)}}, "accountNumber": fmt.Sprintf("ACC-%03d", 100+i)})
		})
	}
	for i, p := range []struct {
		name    string
		deleted bool
	}{{"Chicken breast", false}, {"Salmon fillet", false}, {"Crème fraîche", false}, {"Old house sauce", true}} {
		steps = append(steps, func() error {
			return l.put("products", fmt.Sprintf("product-%d", i+1), start, map[string]any{"name": p.name, "isDeleted": p.deleted})
		})
	}
	steps = append(steps, func() error {
		return l.put("products", "product-9", start, map[string]any{"name": "Typo", "isDeleted": false})
	},
		func() error { return l.put("products", "product-9", l.day(100, 9, 0), nil) })
	for i, p := range []struct {
		name      string
		life      float64
		allergens []any
	}{{"Béchamel", 3, []any{"lait", "gluten"}}, {"Vinaigrette", 5, []any{"moutarde"}}, {"Chicken stock", 2, []any{"céleri"}}} {
		steps = append(steps, func() error {
			return l.put("preparations", fmt.Sprintf("preparation-%d", i+1), start, map[string]any{"name": p.name, "lifespan": p.life,
				"isDeleted": false, "allergens": p.allergens})
		})
	}
	return run(steps...)
}

// profile writes the restaurant's own record. It goes last: its presence
// marks a complete load.
func (l *loader) profile() error {
	start := l.day(historyDays, 9, 0)
	return run(
		func() error {
			return l.put("restaurants", RestaurantID, start, map[string]any{
				"name": "Demo Bistro", "address": "12 Rue des Halles, 75001 Paris", "closingDays": []any{"SUNDAY"},
				"exceptionalClosures": []any{map[string]any{"from": ms(l.day(60, 0, 0)), "to": ms(l.day(53, 0, 0))}},
				"companyName":         "Demo Bistro SAS", "billingEmail": "billing@demo-bistro.example", "preferredLanguage": "fr",
				"multiArea": true, "customerId": "cus_demo_42",
				"detailedAddress": map[string]any{"street": "Rue des Halles", "streetNumber": "12", "city": "Paris",
					"postalCode": "75001", "country": "FR", "formattedAddress": "12 Rue des Halles, 75001 Paris, France"},
				"settings": map[string]any{
					"global":             map[string]any{"lockPastDates": true, "multiUser": true, "temperatureUnit": "°C", "reportsEnabled": true, "reportWeekday": 1},
					"temperatureRecords": map[string]any{"recordsPerDay": 2},
					"cleaning":           map[string]any{"requirePhotoProof": true, "allowGalleryUpload": false},
					"fryerChecks":        map[string]any{"recordTestValue": true},
				},
				"subscription": map[string]any{"isSubscribed": true, "remindersSent": 0},
			})
		},
	)
}

func (l *loader) temperatures() error {
	var steps []func() error
	for ago := 29; ago >= 0; ago-- {
		for _, shift := range []struct {
			name string
			hour int
		}{{"MORNING", 8}, {"EVENING", 19}} {
			for i, base := range []float64{3, 3.5, -19} {
				v := base + float64(l.rnd.IntN(21)-10)/10
				id := fmt.Sprintf("temp-%s-%s-e%d", l.day(ago, 0, 0).Format("20060102"), shift.name, i+1)
				data := map[string]any{"timestamp": ms(l.day(ago, shift.hour, 5+i)), "value": v, "unit": "°C",
					"shift": shift.name, "equipmentId": fmt.Sprintf("equipment-%d", i+1), "userId": "user-1"}
				if i < 2 && v > 4 {
					data["correctiveActions"] = []any{"Door closed properly; re-measured 30 minutes later"}
				}
				steps = append(steps, func() error { return l.put("temperature-records", id, l.day(ago, shift.hour, 6+i), data) })
			}
		}
		for i := 0; i < 3; i++ {
			id := fmt.Sprintf("reading-%s-e%d", l.day(ago, 0, 0).Format("20060102"), i+1)
			steps = append(steps, func() error {
				return l.put("temperature-readings", id, l.day(ago, 3, 0), map[string]any{"timestamp": ms(l.day(ago, 3, 0)),
					"value": []float64{2.9, 3.1, -20.4}[i], "unit": "°C", "equipmentId": fmt.Sprintf("equipment-%d", i+1)})
			})
		}
	}
	return run(steps...)
}

func (l *loader) cycles() error {
	var steps []func() error
	for ago := 20; ago >= 0; ago -= 2 {
		begin := l.day(ago, 14, 0)
		steps = append(steps,
			func() error {
				return l.put("cooling", fmt.Sprintf("cooling-%d", ago), begin, map[string]any{"timestamp": ms(begin), "product": "Beef stew",
					"beginDate": ms(begin), "beginTemperature": 68, "endDate": ms(begin.Add(95 * time.Minute)), "endTemperature": 8, "userId": "user-2"})
			},
			func() error {
				return l.put("freezing", fmt.Sprintf("freezing-%d", ago), begin, map[string]any{"timestamp": ms(begin), "product": "Pizza dough",
					"beginDate": ms(begin), "beginTemperature": 20, "endDate": ms(begin.Add(4 * time.Hour)), "endTemperature": -18})
			},
			func() error {
				return l.put("reheating", fmt.Sprintf("reheating-%d", ago), begin, map[string]any{"timestamp": ms(begin), "product": "Soup",
					"beginDate": ms(begin), "beginTemperature": 4, "endDate": ms(begin.Add(40 * time.Minute)), "endTemperature": 74})
			},
			func() error {
				return l.put("transport", fmt.Sprintf("transport-%d", ago), begin, map[string]any{"timestamp": ms(begin), "product": "Lunch trays",
					"departureLocation": "Central kitchen", "departureTime": ms(begin), "departureTemperature": 67,
					"arrivalLocation": "School canteen", "arrivalTime": ms(begin.Add(25 * time.Minute)), "arrivalTemperature": 63})
			})
	}
	// A cooling cycle still running: end is null until it is closed.
	now := l.now.Add(-30 * time.Minute)
	steps = append(steps, func() error {
		return l.put("cooling", "cooling-running", now, map[string]any{"timestamp": ms(now), "product": "Chicken stock",
			"beginDate": ms(now), "beginTemperature": 72, "endDate": nil, "endTemperature": nil})
	})
	return run(steps...)
}

func (l *loader) cleaning() error {
	steps := []func() error{}
	tasks := []string{"Degrease the hood", "Clean the slicer", "Wash the cold room floor"}
	for i, name := range tasks {
		steps = append(steps, func() error {
			return l.put("cleaning-tasks", fmt.Sprintf("task-%d", i+1), l.day(historyDays, 9, 0), map[string]any{"index": i, "name": name,
				"areaId": "area-1", "recurrence": []int{7, 1, 1}[i], "requirePhotoProof": i == 0, "isDeleted": false})
		})
	}
	for ago := 6; ago >= 0; ago-- {
		at := l.day(ago, 22, 0)
		steps = append(steps, func() error {
			return l.put("cleaning-task-records", fmt.Sprintf("clean-%d", ago), at, map[string]any{"timestamp": ms(at), "cleaningTaskId": "task-2", "userId": "user-3"})
		})
	}
	// Photo proofs: two uploaded, one still pending, one deleted.
	for i := 1; i <= 4; i++ {
		at := l.day(7-i, 22, 5)
		id := fmt.Sprintf("picture-%03d", i)
		steps = append(steps, func() error {
			return l.put("cleaning-task-pictures", id, at, map[string]any{"timestamp": ms(at), "cleaningTaskRecordId": fmt.Sprintf("clean-%d", 7-i),
				"groupId": "proof-" + strconv.Itoa(i), "asset": map[string]any{"objectKey": "cleaning/" + id + ".png", "status": "pending"}})
		})
		if i <= 2 || i == 4 {
			steps = append(steps, func() error {
				return l.upload("cleaning-task-pictures", id, "cleaning/"+id+".png", "image/png", photo(i, color.RGBA{40, 120, 200, 255}))
			})
		}
	}
	steps = append(steps, func() error { return l.put("cleaning-task-pictures", "picture-004", l.day(1, 9, 0), nil) })
	return run(steps...)
}

func (l *loader) fryers() error {
	steps := []func() error{
		func() error {
			return l.put("fryer-equipment", "fryer-1", l.day(historyDays, 9, 0), map[string]any{"index": 0, "name": "Fryer left", "isDeleted": false,
				"areaId": "area-1", "oilCapacity": 8, "capacityUnit": "L", "polarCompoundsWarning": 20, "polarCompoundsLimit": 24,
				"maxOilTemperature": 180, "temperatureUnit": "°C"})
		},
		func() error {
			return l.put("cooking-equipment", "oven-1", l.day(historyDays, 9, 0), map[string]any{"index": 0, "type": "OVEN", "name": "Combi oven",
				"isDeleted": false, "areaId": "area-1", "min": 63, "unit": "°C"})
		},
		func() error {
			return l.put("surface-analyses", "swab-1", l.day(15, 10, 0), map[string]any{"timestamp": ms(l.day(15, 10, 0)),
				"surface": "Cutting board 3", "areaId": "area-1", "method": "ATP swab", "result": "310 RLU", "passed": false,
				"actionPlan": "Replace the board; retest next week", "resultAt": ms(l.day(14, 9, 0)), "userId": "user-1"})
		},
		func() error {
			return l.put("surface-analyses", "swab-2", l.day(8, 10, 0), map[string]any{"timestamp": ms(l.day(8, 10, 0)),
				"surface": "Cutting board 3 (new)", "areaId": "area-1", "method": "ATP swab", "result": "45 RLU", "passed": true})
		},
	}
	for ago := 13; ago >= 0; ago-- {
		tpm := 12 + float64(13-ago)
		decision := "left"
		switch {
		case tpm >= 24:
			decision = "changed"
		case tpm >= 20:
			decision = "filtered"
		}
		at := l.day(ago, 11, 0)
		steps = append(steps,
			func() error {
				return l.put("fryer-checks", fmt.Sprintf("fryer-check-%d", ago), at, map[string]any{"timestamp": ms(at), "fryerEquipmentId": "fryer-1",
					"oilQuality": "amber", "testValue": tpm, "testUnit": "%TPM", "oilTemperature": 172, "temperatureUnit": "°C",
					"decision": decision, "userId": "user-2"})
			},
			func() error {
				return l.put("cooking-temperature-records", fmt.Sprintf("cooking-%d", ago), at.Add(time.Hour), map[string]any{
					"timestamp": ms(at.Add(time.Hour)), "value": 74 + float64(l.rnd.IntN(8)), "unit": "°C", "shift": "LUNCH",
					"cookingEquipmentId": "oven-1", "userId": "user-2"})
			})
	}
	return run(steps...)
}

func (l *loader) labelsAndFiles() error {
	var steps []func() error
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("label-%03d", i)
		at := l.day(10-i, 9, 30)
		steps = append(steps, func() error {
			return l.put("traceability-labels", id, at, map[string]any{"timestamp": ms(at), "supplier": "Fresh Farm Ltd",
				"commentary": "Opened " + at.Format("2006-01-02"), "groupId": "run-" + strconv.Itoa(i), "userId": "user-1",
				"asset": map[string]any{"objectKey": "labels/" + id + ".png", "status": "pending"}})
		})
		if i <= 2 {
			steps = append(steps, func() error {
				return l.upload("traceability-labels", id, "labels/"+id+".png", "image/png", photo(10+i, color.RGBA{230, 200, 60, 255}))
			})
		}
	}
	pdf := minimalPDF("HACCP plan - Demo Bistro")
	csv := []byte("date,fridge,min,max\n" + l.day(1, 0, 0).Format("2006-01-02") + ",Fridge 1,2.8,3.9\n")
	steps = append(steps,
		func() error {
			return l.put("drive-files", "doc-haccp", l.day(90, 9, 0), map[string]any{"s3Key": "drive/demo-bistro/haccp-plan.pdf",
				"name": "HACCP plan.pdf", "sizeBytes": len(pdf), "contentType": "application/pdf",
				"asset": map[string]any{"objectKey": "drive/demo-bistro/haccp-plan.pdf", "status": "pending"}})
		},
		func() error {
			return l.upload("drive-files", "doc-haccp", "drive/demo-bistro/haccp-plan.pdf", "application/pdf", pdf)
		},
		func() error {
			return l.put("drive-files", "doc-temperatures", l.day(1, 9, 0), map[string]any{"s3Key": "drive/demo-bistro/temperatures.csv",
				"name": "temperatures.csv", "sizeBytes": len(csv), "contentType": nil,
				"asset": map[string]any{"objectKey": "drive/demo-bistro/temperatures.csv", "status": "pending"}})
		},
		func() error {
			return l.upload("drive-files", "doc-temperatures", "drive/demo-bistro/temperatures.csv", "text/csv", csv)
		},
		func() error {
			return l.put("drive-files", "doc-pending-scan", l.day(0, 8, 0), map[string]any{"s3Key": "drive/demo-bistro/scan.pdf",
				"name": "Supplier certificate (scan)", "sizeBytes": 0})
		},
	)
	return run(steps...)
}

func (l *loader) deliveries() error {
	suppliers := []map[string]any{{"id": "supplier-1", "name": "Fresh Farm Ltd"}, {"id": "supplier-2", "name": "Boulangerie Martin"},
		{"id": "supplier-3", "name": "Marée du Jour"}}
	for ago := 100; ago >= 0; ago-- {
		if ago%7 == 0 { // closed on Sundays, roughly
			continue
		}
		at := l.day(ago, 7, 10+l.rnd.IntN(40))
		sup := suppliers[ago%3]
		value := 2 + float64(l.rnd.IntN(40))/10
		compliant := value <= 4
		d := map[string]any{
			"id": "delivery-" + at.Format("20060102"), "occurredAt": ms(at), "isCompliant": compliant, "supplier": sup,
			"temperatureRecords": []any{map[string]any{"product": []string{"Chicken breast", "Baguettes", "Salmon fillet"}[ago%3],
				"lotNumber": fmt.Sprintf("L-%05d", 10000+ago), "unit": "°C", "value": value}},
			"nonComplianceReasons": []any{}, "correctiveActions": []any{}, "commentary": nil, "imageCount": 0,
		}
		if !compliant {
			d["nonComplianceReasons"] = []any{"Temperature above 4 °C on arrival"}
			d["correctiveActions"] = []any{"Refused the crate; supplier informed"}
			d["imageCount"] = 1
		}
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		id := d["id"].(string)
		if err := l.send(http.MethodPut, "/v1/ingest/restaurants/"+RestaurantID+"/deliveries/"+id, "application/json", b, nil); err != nil {
			return err
		}
		l.sum.Deliveries++
		if !compliant {
			img := photo(100+ago, color.RGBA{200, 60, 60, 255})
			path := fmt.Sprintf("/v1/ingest/restaurants/%s/deliveries/%s/images/photo-1", RestaurantID, id)
			if err := l.send(http.MethodPut, path, "image/png", img, map[string]string{"Repr-Digest": digest(img)}); err != nil {
				return err
			}
			l.sum.Files++
		}
	}
	return nil
}

// photo draws a small striped PNG, different for every seed.
func photo(seed int, tint color.RGBA) []byte {
	const w, h = 96, 64
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := tint
			if (x+y+seed*7)/12%2 == 0 {
				c = color.RGBA{tint.R / 2, tint.G / 2, tint.B / 2, 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // writing to memory cannot fail
	return buf.Bytes()
}

// minimalPDF is a one-page PDF showing title.
func minimalPDF(title string) []byte {
	stream := fmt.Sprintf("BT /F1 18 Tf 72 720 Td (%s) Tj ET", title)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}
