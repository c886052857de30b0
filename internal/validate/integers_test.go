package validate_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// plainInteger is every integer field's form on the wire.
var plainInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// Every integer field of the schemas, wherever it sits (a member, a nested
// settings group, the asset every file-carrying collection shares, a
// delivery), is rewritten to its plain integer text whatever number form
// was sent; numbers typed as numbers keep theirs; the text stored (the
// data as sent, compacted) changes at those numbers alone.
func TestIntegersTakeTheirPlainForm(t *testing.T) {
	t.Parallel()
	set, err := validate.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		schema   string
		sent     string
		want     string
		rewrites map[string]string
	}{
		{"equipment.data",
			`{"index":1.0,"type":"fridge","name":"F1","isDeleted":false,"min":1.0,"max":1E+1,"outOfRangeCount":2.0}`,
			`{"index":1,"type":"fridge","name":"F1","isDeleted":false,"min":1.0,"max":1E+1,"outOfRangeCount":2.0}`,
			map[string]string{"/index": "1"}},
		{"cleaning-tasks.data",
			`{"index":1E2,"name":"Floor","recurrence":2.50e1,"isDeleted":false}`,
			`{"index":100,"name":"Floor","recurrence":25,"isDeleted":false}`,
			map[string]string{"/index": "100", "/recurrence": "25"}},
		{"cleaning-tasks.data",
			`{"index":-0.0,"name":"Floor","recurrence":0E0,"isDeleted":false}`,
			`{"index":0,"name":"Floor","recurrence":0,"isDeleted":false}`,
			map[string]string{"/index": "0", "/recurrence": "0"}},
		{"cleaning-tasks.data", // already plain: nothing to do
			`{"index":7,"name":"Floor","recurrence":-3,"isDeleted":false}`,
			`{"index":7,"name":"Floor","recurrence":-3,"isDeleted":false}`,
			nil},
		{"restaurants.data",
			`{"name":"B","address":"A","closingDays":[],"settings":{"global":{"exportSchedule":{"dayOfWeek":3.0,"dayOfMonth":1.5e1},` +
				`"reportWeekday":5E0},"temperatureRecords":{"recordsPerDay":2.0}},"subscription":{"remindersSent":-0}}`,
			`{"name":"B","address":"A","closingDays":[],"settings":{"global":{"exportSchedule":{"dayOfWeek":3,"dayOfMonth":15},` +
				`"reportWeekday":5},"temperatureRecords":{"recordsPerDay":2.0}},"subscription":{"remindersSent":0}}`,
			map[string]string{"/settings/global/exportSchedule/dayOfWeek": "3", "/settings/global/exportSchedule/dayOfMonth": "15",
				"/settings/global/reportWeekday": "5", "/subscription/remindersSent": "0"}},
		{"fryer-equipment.data",
			`{"index":12.00,"name":"Fryer","isDeleted":false}`,
			`{"index":12,"name":"Fryer","isDeleted":false}`,
			map[string]string{"/index": "12"}},
		{"cooking-equipment.data",
			`{"index":null,"name":"Oven","isDeleted":false,"min":6.0E1}`,
			`{"index":null,"name":"Oven","isDeleted":false,"min":6.0E1}`,
			nil},
		{"cleaning-task-pictures.data",
			`{"timestamp":"1","part":2.0,"asset":{"objectKey":"k","status":"uploaded","contentType":"image/png","byteLength":1.024e3,` +
				`"sha256":"` + string(bytes.Repeat([]byte("a"), 64)) + `"}}`,
			`{"timestamp":"1","part":2.0,"asset":{"objectKey":"k","status":"uploaded","contentType":"image/png","byteLength":1024,` +
				`"sha256":"` + string(bytes.Repeat([]byte("a"), 64)) + `"}}`,
			map[string]string{"/asset/byteLength": "1024"}},
		{"delivery",
			`{"id":"d1","occurredAt":"1","isCompliant":true,"supplier":{"id":"s","name":"n"},` +
				`"temperatureRecords":[{"product":"p","lotNumber":"l","unit":"C","value":1E+2},{"product":"q","lotNumber":"m","unit":"C","value":-0.0}],` +
				`"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":2.0}`,
			`{"id":"d1","occurredAt":"1","isCompliant":true,"supplier":{"id":"s","name":"n"},` +
				`"temperatureRecords":[{"product":"p","lotNumber":"l","unit":"C","value":1E+2},{"product":"q","lotNumber":"m","unit":"C","value":-0.0}],` +
				`"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":2}`,
			map[string]string{"/imageCount": "2"}},
	} {
		t.Run(tc.schema, func(t *testing.T) {
			doc, err := validate.Decode([]byte(tc.sent))
			if err != nil {
				t.Fatal(err)
			}
			if errs := set.Validate(tc.schema, doc, ""); len(errs) > 0 {
				t.Fatalf("the schema refuses %s: %v", tc.sent, errs)
			}
			got := set.Integers(tc.schema, doc)
			if !maps.Equal(got, tc.rewrites) {
				t.Fatalf("rewrites %v, want %v", got, tc.rewrites)
			}
			stored, err := validate.ReplaceNumbers([]byte(tc.sent), got)
			if err != nil {
				t.Fatal(err)
			}
			if string(stored) != tc.want {
				t.Fatalf("stored text\n%s\nwant\n%s", stored, tc.want)
			}
			// The document now holds the same numbers as the text.
			fromDoc, err := wire.CanonicalDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			fromText, err := wire.CanonicalJSON(stored)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fromDoc, fromText) {
				t.Fatalf("document %s, text %s", fromDoc, fromText)
			}
			for _, text := range got {
				if !plainInteger.MatchString(text) {
					t.Fatalf("%q is no plain integer", text)
				}
			}
		})
	}
}

// A value with a fraction in an integer field is no integer: the schema
// refuses it with a 400 pointing at the member, before any rewrite.
func TestIntegerFieldRefusesFraction(t *testing.T) {
	t.Parallel()
	set, err := validate.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"1.5", "2.5e-1", "1E-1", "0.000001"} {
		doc, err := validate.Decode([]byte(`{"index":` + n + `,"name":"Floor","recurrence":1,"isDeleted":false}`))
		if err != nil {
			t.Fatal(err)
		}
		errs := set.Validate("cleaning-tasks.data", doc, "/data")
		if len(errs) != 1 || errs[0].Pointer != "/data/index" {
			t.Fatalf("%s: violations %v, want one at /data/index", n, errs)
		}
	}
	doc, err := validate.Decode([]byte(`{"id":"d1","occurredAt":"1","isCompliant":true,"supplier":{"id":"s","name":"n"},"temperatureRecords":[],` +
		`"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":1.5}`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := set.Validate("delivery", doc, ""); len(errs) != 1 || errs[0].Pointer != "/imageCount" {
		t.Fatalf("violations %v, want one at /imageCount", errs)
	}
}

// ReplaceNumbers rewrites the numbers at the pointers given and leaves
// every other byte alone: strings that look like numbers, escapes, member
// names that need escaping in a pointer, numbers deep in arrays.
func TestReplaceNumbers(t *testing.T) {
	t.Parallel()
	raw := `{"a/b":1.0,"s":"1.0","~":[0,[2E0]],"e":"\u00e9\"","n":{"x":1.0}}`
	got, err := validate.ReplaceNumbers([]byte(raw), map[string]string{"/a~1b": "1", "/~0/1/0": "2", "/n/x": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a/b":1,"s":"1.0","~":[0,[2]],"e":"\u00e9\"","n":{"x":1}}`; string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	same, err := validate.ReplaceNumbers([]byte(raw), nil)
	if err != nil || string(same) != raw {
		t.Fatalf("nothing to rewrite: %s, %v", same, err)
	}
	// A pointer that names no number is a mistake of the caller, not a
	// silent no-op: "/s" is a string.
	if _, err := validate.ReplaceNumbers([]byte(raw), map[string]string{"/s": "1"}); err == nil {
		t.Fatal("a pointer at a string was accepted")
	}
	if _, err := validate.ReplaceNumbers([]byte(raw), map[string]string{"/missing": "1"}); err == nil {
		t.Fatal("a pointer at nothing was accepted")
	}
}

// The walk follows what applies to the value: the anyOf and oneOf
// branches that accept it, the if/then/else branch chosen, prefixItems,
// patternProperties and additionalProperties; a number a branch that does
// not apply types as an integer keeps its text.
func TestIntegersFollowApplicators(t *testing.T) {
	t.Parallel()
	const schema = `{
	  "$schema": "https://json-schema.org/draft/2020-12/schema",
	  "type": "object",
	  "properties": {
	    "any": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
	    "one": {"oneOf": [{"type": "object", "required": ["k"], "properties": {"k": {"const": "i"}, "v": {"type": "integer"}}},
	                      {"type": "object", "required": ["k"], "properties": {"k": {"const": "n"}, "v": {"type": "number"}}}]},
	    "cond": {"type": "object", "if": {"required": ["int"]}, "then": {"properties": {"v": {"type": "integer"}}},
	             "else": {"properties": {"v": {"type": "number"}}}},
	    "other": {"type": "object", "if": {"required": ["int"]}, "then": {"properties": {"v": {"type": "integer"}}},
	              "else": {"properties": {"v": {"type": "number"}}}},
	    "tuple": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "integer"}], "items": {"type": ["integer", "null"]}},
	    "pat": {"type": "object", "patternProperties": {"^i": {"type": "integer"}}, "additionalProperties": {"type": "number"}},
	    "both": {"allOf": [{"type": "number"}, {"type": "integer"}]}
	  }
	}`
	sent := `{"any":3.0,"one":{"k":"i","v":4.0},"two":{"k":"n","v":4.0},"cond":{"int":true,"v":5.0},"other":{"v":5.0},` +
		`"tuple":[1.0,2.0,3.0,null],"pat":{"i1":6.0,"x":6.0},"both":7.0}`
	set, err := validate.CompileForTest("t", schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := validate.Decode([]byte(sent))
	if err != nil {
		t.Fatal(err)
	}
	if errs := set.Validate("t", doc, ""); len(errs) > 0 {
		t.Fatal(errs)
	}
	got := set.Integers("t", doc)
	want := map[string]string{"/any": "3", "/one/v": "4", "/cond/v": "5", "/tuple/1": "2", "/tuple/2": "3", "/pat/i1": "6", "/both": "7"}
	if !maps.Equal(got, want) {
		keys := slices.Sorted(maps.Keys(got))
		t.Fatalf("rewrites %v (%v), want %v", got, keys, want)
	}
	stored, err := validate.ReplaceNumbers([]byte(sent), got)
	if err != nil {
		t.Fatal(err)
	}
	const wantText = `{"any":3,"one":{"k":"i","v":4},"two":{"k":"n","v":4.0},"cond":{"int":true,"v":5},"other":{"v":5.0},` +
		`"tuple":[1.0,2,3,null],"pat":{"i1":6,"x":6.0},"both":7}`
	if string(stored) != wantText {
		t.Fatalf("stored %s\nwant   %s", stored, wantText)
	}
	var check any
	if err := json.Unmarshal(stored, &check); err != nil {
		t.Fatal(err)
	}
}
