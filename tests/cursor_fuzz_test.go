package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/cursor"
)

// fuzzCursorKey signs the cursors of FuzzSignedCursors as the service does.
const fuzzCursorKey = "fuzz-cursor-key-0123456789abcdef0123456789"

// Signed is not trusted: a cursor correctly signed with the service's key
// (a leaked key, a bug) whose position holds anything at all, in any of
// the cursor kinds, is answered with a 4xx or a page, never a 5xx. The
// seeds run in `make test`; `make fuzz` explores.
func FuzzSignedCursors(f *testing.F) {
	a := newApp(f, withConfig(func(c *config.Config) { c.CursorKey = fuzzCursorKey }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read", "areas:read"))
	codec := cursor.New([]byte(fuzzCursorKey), time.Now)
	client := a.srv.Client()
	for _, s := range []string{`{"o":1,"i":"d1"}`, `{"o":1,"i":"a\u0000b"}`, `{"o":-1,"i":"d1"}`, `{"o":"x","i":7}`,
		`{"o":9223372036854775807,"i":"` + string(make([]byte, 300)) + `"}`, `{"i":"\ud800"}`, `null`, `[]`, `{}`,
		`{"p":-5,"a":3}`, `{"p":1,"a":-1,"u":-1}`, `{"s":-1}`, `{"s":9223372036854775807}`, `{"p":1e300}`, `{"a":-1}`,
		`{"a":9223372036854775807}`, `{"s":{"n":5,"x":3},"f":""}`, `{"s":{"n":1,"x":9,"i":[0]}}`,
		`{"s":{},"h":{"x":9223372036854775807},"r":"r1","t":"areas","f":""}`, `{"s":{},"r":"r1","t":"nope"}`,
		`{"f":"","h":{},"r":"r1","t":"areas","i":true,"p":9223372036854775807,"a":-1,"u":1}`, `{"f":"","h":{"n":3,"x":2},"u":1}`,
		`{"f":"","h":{},"r":"r2","t":"deliveries","i":true,"a":5,"u":4102444800}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pos string) {
		raw := json.RawMessage(pos)
		if !json.Valid(raw) {
			raw, _ = json.Marshal(pos) // still a position, as a JSON string
		}
		kinds := []struct {
			kind cursor.Kind
			path string
			bind []string
		}{
			{cursor.KindDeliveries, "/v1/restaurants/r1/deliveries?from=0&to=1000&cursor=", []string{"r1", "0", "1000"}},
			{cursor.KindRecords, "/v1/restaurants/r1/collections/areas/records?limit=5&cursor=", []string{"r1", "areas", "5"}},
			{cursor.KindChanges, "/v1/restaurants/r1/collections/areas/records?limit=5&cursor=", []string{"r1", "areas"}},
			{cursor.KindDeliveryChanges, "/v1/restaurants/r1/delivery-changes?limit=5&cursor=", []string{"r1"}},
			{cursor.KindStreamChanges, "/v1/changes?limit=5&cursor=", nil},
			{cursor.KindRecordFeed, "/v1/records?limit=5&cursor=", nil},
		}
		for _, k := range kinds {
			token, err := codec.Seal(string(k.kind), k.bind, raw, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			hr, err := http.NewRequest(http.MethodGet, a.srv.URL+k.path+url.QueryEscape(token), nil)
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Authorization", "Bearer "+key)
			res, err := client.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if res.StatusCode >= 500 {
				t.Fatalf("%s cursor at %s: %d %s", k.kind, pos, res.StatusCode, body)
			}
		}
	})
}
