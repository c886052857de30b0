package validate_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
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
		`{"index":1.0,"name":"n","recurrence":2.50e1,"isDeleted":false}`,
		`{"name":"B","address":"A","closingDays":[],"settings":{"global":{"reportWeekday":5E0}},"subscription":{"remindersSent":-0.0}}`,
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
		// A body a schema accepts gets its integer fields' plain form in
		// its text exactly where its document got it.
		for _, name := range []string{"delivery", "restaurants.data", "cleaning-tasks.data", "cleaning-task-pictures.data"} {
			doc, _ := validate.Decode(body)
			if len(set.Validate(name, doc, "")) > 0 {
				continue
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, body); err != nil {
				t.Fatal(err)
			}
			stored, err := validate.ReplaceNumbers(compact.Bytes(), set.Integers(name, doc))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fromDoc, err := wire.CanonicalDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			if fromText, err := wire.CanonicalJSON(stored); err != nil || !bytes.Equal(fromDoc, fromText) {
				t.Fatalf("%s: document %s, stored text %s (%v)", name, fromDoc, stored, err)
			}
		}
	})
}

// A number is held to a string's cap of 10,000 characters, and nothing
// shorter; its value to a double's range.
func TestNumberLimits(t *testing.T) {
	long := "0." + strings.Repeat("9", 9998)
	for n, ok := range map[string]bool{
		long: true, long + "9": false, "1" + strings.Repeat("0", 300): true,
		"1.7976931348623157e308": true, "1e400": false, "1e-400": false, "-0.0": true, "1E+2": true,
	} {
		_, err := validate.Decode([]byte(`{"n":` + n + `}`))
		if (err == nil) != ok {
			t.Errorf("%.30s... (%d characters): accepted %v, want %v (%v)", n, len(n), err == nil, ok, err)
		}
	}
}

// DecodeKeeping's member is the member's own text, compacted: numbers,
// escapes and member order as sent; a member of the same name deeper in
// the body is not it.
func TestDecodeKeepingMember(t *testing.T) {
	body := []byte("{\"id\":\"x\", \"data\" : { \"b\" : 1E+2,\n \"a\" : [ -0.0 , \"\\u00e9 x\" ] }, \"z\":1}")
	_, got, err := validate.DecodeKeeping(body, "data")
	if err != nil || string(got) != `{"b":1E+2,"a":[-0.0,"\u00e9 x"]}` {
		t.Fatalf("got %s, %v", got, err)
	}
	if _, got, err := validate.DecodeKeeping(body, "none"); got != nil || err != nil {
		t.Fatalf("absent member: %s, %v", got, err)
	}
	if _, got, err := validate.DecodeKeeping([]byte(`{"x":{"data":1}}`), "data"); got != nil || err != nil {
		t.Fatalf("nested member: %s, %v", got, err)
	}
}

// FuzzDecodeReadsOnce: reading a body once (DecodeKeeping) answers
// exactly as reading it with encoding/json, then the strict reader, then
// once more for the member did: the same document, the same member text,
// the same refusal.
func FuzzDecodeReadsOnce(f *testing.F) {
	for _, seed := range []string{
		`{"id":"a1","data":{"name":"x","n":[1.50,-0.0,1E+2]},"deleted":false}`, `{"data" : 7 }`, `{"data":null}`,
		`{"a":1e400}`, `{"a":"\u0000"}`, `{"\u0000":1}`, `[]`, `{`, `{}`, `{} {}`, `{}x`, ` {"a":{}} `, `"x"`, ``,
		`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"data":{"data":1},"x":[{"data":2}]}`,
		`{"a":[1,2,]}`, `{"a":01}`, `{"a":.5}`, "\ufeff{}", `{"data":"` + strings.Repeat("é", 10) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		doc, raw, err := validate.DecodeKeeping(body, "data")
		wantDoc, wantRaw, wantErr := validate.DecodeReadingTwice(body, "data")
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if err != nil {
			if a, ok := apperr.As(err); ok {
				w, _ := apperr.As(wantErr)
				if !reflect.DeepEqual(a, w) {
					t.Fatalf("refusal %+v, want %+v", a, w)
				}
			}
			return
		}
		if !reflect.DeepEqual(doc, wantDoc) {
			t.Fatalf("document %#v, want %#v", doc, wantDoc)
		}
		if !bytes.Equal(raw, wantRaw) || (raw == nil) != (wantRaw == nil) {
			t.Fatalf("member %q, want %q", raw, wantRaw)
		}
	})
}

// BenchmarkDecodeIngestBody: an ingest body read once (DecodeKeeping)
// against the reads it replaced (DecodeReadingTwice).
func BenchmarkDecodeIngestBody(b *testing.B) {
	body := []byte(`{"id":"a1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1767225600000",` +
		`"sourceVersion":"4.2.0","deleted":false,"data":{"name":"Walk-in fridge","index":3,"isDeleted":false,` +
		`"readings":[{"at":"1767225600000","value":3.50,"unit":"°C"},{"at":"1767225660000","value":3.4,"unit":"°C"}],` +
		`"notes":"door seal checked \u2013 ok"}}`)
	for name, decode := range map[string]func([]byte, string) (map[string]any, []byte, error){
		"once": func(body []byte, keep string) (map[string]any, []byte, error) {
			return validate.DecodeKeeping(body, keep)
		},
		"before": validate.DecodeReadingTwice,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := decode(body, "data"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
