package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// The reflection-free reading of temperature records gives what
// encoding/json with UseNumber gives, for the shape ingest stores and for
// every other one (which it hands to encoding/json).
func TestTemperatureRecordsDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		raw  string
		fast bool // read without encoding/json
	}{
		"empty":            {`[]`, true},
		"empty, spaced":    {`[ ]`, true},
		"jsonb text":       {`[{"unit": "C", "value": 3.50, "product": "Milk", "lotNumber": "L1"}, {"unit": "F", "value": -0.5e+2, "product": "é \"q\" \u2028", "lotNumber": ""}]`, true},
		"empty object":     {`[{}]`, true},
		"no value":         {`[{"product": "p", "lotNumber": "l", "unit": "C"}]`, true},
		"other case":       {`[{"Product": "p", "VALUE": 1}]`, false},
		"unknown member":   {`[{"product": "p", "extra": {"a": [1]}}]`, false},
		"null member":      {`[{"product": null, "value": 1}]`, false},
		"string value":     {`[{"value": "12.5"}]`, false},
		"duplicate member": {`[{"value": 1, "value": 2}]`, false},
		"invalid UTF-8":    {"[{\"product\": \"a\xffb\"}]", false},
		"trailing value":   {`[] []`, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var dec tempsDecoder
			if _, fast := dec.decode([]byte(tc.raw)); fast != tc.fast {
				t.Fatalf("read without encoding/json: %v, want %v", fast, tc.fast)
			}
			got, gotErr := dec.fromRow(db.Delivery{ID: "d1", TemperatureRecords: []byte(tc.raw)})
			var want []wire.TemperatureRecord
			d := json.NewDecoder(bytes.NewReader([]byte(tc.raw)))
			d.UseNumber()
			wantErr := d.Decode(&want)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("error %v, encoding/json's %v", gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got.TemperatureRecords, nonNil(want)) {
				t.Fatalf("got %#v\nencoding/json %#v", got.TemperatureRecords, nonNil(want))
			}
		})
	}
}
