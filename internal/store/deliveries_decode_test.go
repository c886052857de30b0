package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
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
		"stored text":      {`[{"product":"\u003cb\u003e \u0026","lotNumber":"","unit":"°C","value":1E+2},{"product":"p","lotNumber":"l","unit":"C","value":-0.0}]`, true},
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

// FuzzTemperatureRecordsDecode holds the reading of temperature records
// to encoding/json with UseNumber over any stored text, with one decoder
// reading two deliveries in turn as it reads a page: the second reads as
// if alone, and the first's records are not changed by it (nothing points
// into the decoder's buffer).
func FuzzTemperatureRecordsDecode(f *testing.F) {
	for _, s := range []string{
		`[]`, `[ ]`, `null`, `[{}]`, `{}`, `[null]`, `[[]]`, `[1]`, `"x"`, ``, `[`, `[{"value":1}]x`,
		`[{"unit": "C", "value": 3.50, "product": "Milk", "lotNumber": "L1"}, {"unit": "F", "value": -0.5e+2, "product": "é \"q\" \u2028", "lotNumber": ""}]`,
		`[{"product":"p","lotNumber":"l","unit":"°C","value":-0.0},{"value":1E+2},{"value":1e-7},{"value":-9223372036854775808}]`,
		`[{"value":0.` + strings.Repeat("1234567890", 30) + `}]`,
		`[{"Product": "p", "VALUE": 1}]`, `[{"product": "p", "extra": {"a": [1]}}]`, `[{"product": null, "value": 1}]`,
		`[{"value": "12.5"}]`, `[{"value": "x"}]`, `[{"value": 1, "value": 2}]`, `[{"pro\u0064uct": "esc"}]`,
		// As the service stores them since migration 00019 (json, the text
		// encoding/json writes: numbers as sent, <, > and & escaped).
		`[{"product":"\u003cb\u003e \u0026","lotNumber":"","unit":"°C","value":1E+2},{"product":"p","lotNumber":"l","unit":"C","value":-0.0}]`,
		`[{"product":"p","lotNumber":"l","unit":"C","value":2.50E-3}]`,
		"[{\"product\": \"a\xffb\"}]", `[{"product": "\ud800"}]`, `[{"product": "\ud83d\ude00 <&>"}]`, `[] []`,
	} {
		f.Add([]byte(s), []byte(`[{"product":"first","lotNumber":"l1","unit":"C","value":1.5}]`))
		f.Add([]byte(`[{"product":"first","lotNumber":"l1","unit":"C","value":1.5}]`), []byte(s))
	}
	decodeAlone := func(raw []byte) ([]wire.TemperatureRecord, error) {
		var want []wire.TemperatureRecord
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		err := d.Decode(&want)
		return nonNil(want), err
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var dec tempsDecoder
		a, aErr := dec.fromRow(db.Delivery{ID: "d1", TemperatureRecords: bytes.Clone(first)})
		kept := fmt.Sprintf("%#v", a.TemperatureRecords) // the bytes, not strings that might share them
		b, bErr := dec.fromRow(db.Delivery{ID: "d2", TemperatureRecords: bytes.Clone(second)})
		for _, c := range []struct {
			raw  []byte
			got  []wire.TemperatureRecord
			err  error
			name string
		}{{first, a.TemperatureRecords, aErr, "first"}, {second, b.TemperatureRecords, bErr, "second"}} {
			want, wantErr := decodeAlone(c.raw)
			if (c.err == nil) != (wantErr == nil) {
				t.Fatalf("%s %q: error %v, encoding/json's %v", c.name, c.raw, c.err, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(c.got, want) {
				t.Fatalf("%s %q:\ngot           %#v\nencoding/json %#v", c.name, c.raw, c.got, want)
			}
		}
		if now := fmt.Sprintf("%#v", a.TemperatureRecords); now != kept {
			t.Fatalf("reading %q changed the records read before it: %s, were %s", second, now, kept)
		}
	})
}
