package validate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/validate"
)

// FuzzBodies: whatever bytes arrive, decoding and validating never panic,
// and every body accepted holds only numbers and strings PostgreSQL can
// store.
func FuzzBodies(f *testing.F) {
	set, err := validate.Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"id":"a1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,"data":{"name":"x","isDeleted":false}}`,
		`{"id":"d1","occurredAt":"1","isCompliant":true,"supplier":{"id":"s","name":"n"},"temperatureRecords":[{"product":"p","lotNumber":"l","unit":"°C","value":3.5}],"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":0}`,
		`{"a":1e400}`, `{"a":"\u0000"}`, `[]`, `{`, `{"a":-0.0,"b":1E2,"c":[[[]]]}`, `{"restaurantId":"x","scopes":["areas:read"]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, err := validate.Decode(body)
		if err != nil {
			return
		}
		for _, name := range []string{"ingest", "delivery", "session-request", "areas.data", "restaurants.data"} {
			set.Validate(name, doc, "")
		}
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("accepted body does not re-encode: %v", err)
		}
		if strings.Contains(string(out), `\u0000`) {
			t.Fatalf("accepted body holds NUL: %s", out)
		}
	})
}
