package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hand-written writer and encoding/json give the same JSON for every
// field, including strings that need escaping; a field added to Envelope
// or WalkPage and forgotten in AppendJSON fails here (every field is set).
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	sv := "v\"2\\ \u2028 <b>&"
	next, changes := "c1.-_", "c2"
	tricky := "é \"quoted\" \\ \n\t\x01 <script> & \u2028\u2029 😀"
	pages := []WalkPage{
		{Data: []Envelope{}},
		{Data: []Envelope{{
			ID: tricky, RestaurantID: "r1", Collection: "areas",
			Data:    json.RawMessage(`{"name": "x", "n": [1.50, -0, 1e3], "nested": {"a": null}}`),
			Deleted: false, CapturedAt: 1, ReceivedAt: 9223372036854775807, Sequence: 42,
			MutationID: tricky, SourceVersion: &sv, PayloadVersion: 1, StateKind: "received-shadow-snapshot",
		}, {
			ID: "gone", RestaurantID: "r1", Collection: "areas", Deleted: true, CapturedAt: 0, ReceivedAt: 0,
			Sequence: 43, MutationID: "m", PayloadVersion: 1, StateKind: "received-shadow-snapshot",
		}}, NextCursor: &next, ChangesCursor: &changes},
	}
	appendsAsEncodingJSON(t, pages)
	// Every field of Envelope is set in one of the envelopes above: a
	// field left zero everywhere would hide one AppendJSON forgot.
	live, gone := reflect.ValueOf(pages[1].Data[0]), reflect.ValueOf(pages[1].Data[1])
	for i := 0; i < live.NumField(); i++ {
		if live.Field(i).IsZero() && gone.Field(i).IsZero() {
			t.Errorf("set Envelope.%s in this test", live.Type().Field(i).Name)
		}
	}
}

// appendsAsEncodingJSON checks that each page's AppendJSON writes the
// value encoding/json writes.
func appendsAsEncodingJSON[P interface{ AppendJSON([]byte) ([]byte, error) }](t *testing.T, pages []P) {
	t.Helper()
	for i, p := range pages {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("page %d: not JSON: %v\n%s", i, err, got)
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("page %d:\nencoding/json: %s\nAppendJSON:    %s", i, want, got)
		}
	}
}

func TestAppendJSONRefusesInvalidUTF8(t *testing.T) {
	_, err := Envelope{ID: "bad\xff"}.AppendJSON(nil)
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

// A page of deliveries written by hand is the JSON encoding/json writes
// (every field set in one of the deliveries; nil lists are null there
// too), and a page of items that do not append themselves is refused,
// for encoding/json to write.
func TestDeliveryPageAppendJSONMatchesEncodingJSON(t *testing.T) {
	tricky := "é \"quoted\" \\ \n\t\x01 <script> & \u2028\u2029 😀"
	note, next := tricky, "c.1-_"
	pages := []Page[Delivery]{
		{},
		{Data: []Delivery{}},
		{Data: []Delivery{{
			ID: tricky, RestaurantID: "r1", OccurredAt: 9223372036854775807, IsCompliant: true,
			Supplier: Supplier{ID: tricky, Name: "S"},
			TemperatureRecords: []TemperatureRecord{
				{Product: tricky, LotNumber: "L1", Unit: "°C", Value: "3.50"},
				{Product: "p", Value: "-0.5e+2"}, {Product: "zero"},
			},
			NonComplianceReasons: []string{tricky, ""}, CorrectiveActions: []string{"a"},
			Commentary: &note, ImageCount: 3, ReceivedAt: 1763720000000,
		}, {ID: "d2", RestaurantID: "r1"}}, NextCursor: &next},
	}
	appendsAsEncodingJSON(t, pages)
	full := reflect.ValueOf(pages[2].Data[0])
	for i := 0; i < full.NumField(); i++ {
		if full.Field(i).IsZero() {
			t.Errorf("set Delivery.%s in this test", full.Type().Field(i).Name)
		}
	}
	if _, err := (Page[Supplier]{Data: []Supplier{{ID: "s"}}}).AppendJSON(nil); err == nil {
		t.Error("a page of items without AppendJSON was written")
	}
	bad := Page[Delivery]{Data: []Delivery{{TemperatureRecords: []TemperatureRecord{{Value: "1e"}}}}}
	if _, err := bad.AppendJSON(nil); err == nil {
		t.Error("an invalid number was written")
	}
	if _, err := json.Marshal(bad); err == nil {
		t.Error("encoding/json wrote an invalid number")
	}
}

func TestIsNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "10", "3.50", "-0.5e+2", "1E9", "1e-0"} {
		if !isNumber(s) {
			t.Errorf("%q is a number", s)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x1", "NaN", "1 ", "1.5.5"} {
		if isNumber(s) {
			t.Errorf("%q is not a number", s)
		}
	}
}

// pureJSON is what gin's PureJSON writes for v, less the trailing newline.
func pureJSON(t *testing.T, v any) string {
	t.Helper()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// The hand-written writers are byte for byte what encoding/json writes
// without HTML escaping, strings included (data excepted: it is copied as
// stored, which ingest compacted, as it is here).
func TestAppendJSONIsByteForByte(t *testing.T) {
	var all strings.Builder
	for c := 0; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	strs := []string{"", all.String(), "é 😀 \u2028\u2029 \u2027\u202a <b>&amp;", "\ufffd", "a\u2028"}
	for _, s := range strs {
		got, err := appendString(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		if want := pureJSON(t, s); string(got) != want {
			t.Errorf("%q:\nencoding/json %s\nappendString  %s", s, want, got)
		}
	}
	sv := strs[2]
	next := "c1"
	values := []interface {
		AppendJSON([]byte) ([]byte, error)
	}{
		// A page writes each record's restaurantId and collection once
		// and reuses them while the next record's are the same: records
		// of one owner, another, and the first again.
		WalkPage{Data: []Envelope{{ID: strs[1], RestaurantID: strs[2], Collection: "areas", Data: json.RawMessage(`{"a":[1.50,"<\u2028>"]}`),
			CapturedAt: 1, ReceivedAt: 2, Sequence: 3, MutationID: "m", SourceVersion: &sv, PayloadVersion: 1, StateKind: StateKind},
			{ID: "b", RestaurantID: strs[2], Collection: "areas", Deleted: true, Sequence: 4, StateKind: StateKind},
			{ID: "c", RestaurantID: strs[2], Collection: strs[1], Sequence: 5, StateKind: strs[2]},
			{ID: "d", RestaurantID: "r1", Collection: strs[1], Sequence: 6},
			{ID: "e", RestaurantID: strs[2], Collection: "areas", Sequence: 7, StateKind: StateKind}},
			NextCursor: &next},
		Page[Delivery]{Data: []Delivery{{ID: strs[1], RestaurantID: "r1", OccurredAt: 5, Supplier: Supplier{ID: strs[2], Name: strs[4]},
			TemperatureRecords:   []TemperatureRecord{{Product: strs[2], Unit: "°C", Value: "3.50"}, {}},
			NonComplianceReasons: strs, CorrectiveActions: []string{}, Commentary: &sv, ImageCount: 1, ReceivedAt: 6}, {}}},
	}
	for i, v := range values {
		got, err := v.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := pureJSON(t, v); string(got) != want {
			t.Errorf("value %d:\nencoding/json %s\nAppendJSON    %s", i, want, got)
		}
	}
}

// FuzzAppendJSONIsEncodingJSON holds the hand-written writers to
// encoding/json without HTML escaping, byte for byte, over any strings
// and any temperature value: where AppendJSON writes, it writes what
// PureJSON wrote; where it refuses, a string is not UTF-8 (encoding/json
// writes it with U+FFFD) or the value is not a JSON number (encoding/json
// refuses it too).
func FuzzAppendJSONIsEncodingJSON(f *testing.F) {
	for _, seed := range [][3]string{
		{"", "", ""},
		{"plain", "r1", "0"},
		{"<script>&</script>", "\u2028\u2029", "-0"},
		{"\x00\x01\x08\x0c\x1f\x7f \" \\ / \b\f\n\r\t", "é 😀 \ufffd", "-0.0"},
		{"a\xffb", "ok", "1E+2"},
		{"\xed\xa0\x80 lone surrogate bytes", "\xc0\xaf", "1e-7"},
		{"\u2027\u202a", "\U0010ffff", "-9223372036854775808"},
		{"x", "y", "0." + strings.Repeat("1234567890", 30)},
		{"x", "y", "1e"}, {"x", "y", "01"}, {"x", "y", "+1"}, {"x", "y", ".5"}, {"x", "y", "1."}, {"x", "y", "NaN"}, {"x", "y", " 1"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, s, u, value string) {
		sv := u
		values := []interface {
			AppendJSON([]byte) ([]byte, error)
		}{
			Page[Delivery]{Data: []Delivery{{ID: s, RestaurantID: u, OccurredAt: -9223372036854775808, IsCompliant: true,
				Supplier: Supplier{ID: u, Name: s}, TemperatureRecords: []TemperatureRecord{{Product: s, LotNumber: u, Unit: s, Value: json.Number(value)}},
				NonComplianceReasons: []string{s, u}, CorrectiveActions: []string{}, Commentary: &sv, ImageCount: -1, ReceivedAt: 9223372036854775807}, {}}, NextCursor: &sv},
			WalkPage{Data: []Envelope{{ID: s, RestaurantID: u, Collection: s, Data: json.RawMessage(`{"a":1}`), MutationID: u,
				SourceVersion: &sv, StateKind: s}, {ID: u, RestaurantID: u, Collection: s, StateKind: StateKind},
				{ID: s, RestaurantID: s, Collection: u}}, NextCursor: &sv, ChangesCursor: &sv},
		}
		valid := utf8.ValidString(s) && utf8.ValidString(u)
		for i, v := range values {
			got, err := v.AppendJSON(nil)
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			wantErr := enc.Encode(v)
			switch {
			case err == nil && wantErr != nil:
				t.Fatalf("value %d: AppendJSON wrote what encoding/json refuses (%v): %s", i, wantErr, got)
			case err == nil:
				if want := strings.TrimSuffix(buf.String(), "\n"); string(got) != want {
					t.Fatalf("value %d:\nencoding/json %s\nAppendJSON    %s", i, want, got)
				}
			case valid && wantErr == nil:
				t.Fatalf("value %d: AppendJSON refused (%v) what encoding/json writes: %s", i, err, buf.String())
			}
		}
	})
}

// FuzzIsNumber holds isNumber to encoding/json's test of a json.Number.
func FuzzIsNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "-0.0", "1E+2", "1e-7", "01", "1.", ".5", "1e", "1e+", "-", "+1", "0x1", "1 ", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := json.Marshal(json.Number(s))
		if want := s != "" && err == nil; isNumber(s) != want {
			t.Fatalf("isNumber(%q) = %v, encoding/json accepts it: %v", s, isNumber(s), want)
		}
	})
}

// FuzzCompacted holds Compacted to encoding/json: valid JSON is compacted
// exactly when json.Compact leaves it as it is.
func FuzzCompacted(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, `"a b"`, `"\" "`, `"\\" `, `["x\\\"y",1 ]`, "{\n}", "[1,\t2]", "\r\n1",
		`{"n": [1, 2.50, 0, 100], "o": {"k": {}, "l": []}, "u": "é \u2028 \\ \" :, "}`, `{"n":[1,2.50],"s":"a, b: \"c\" {d}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatal(err)
		}
		if want := bytes.Equal(compact.Bytes(), data); Compacted(data) != want {
			t.Fatalf("Compacted(%q) = %v; json.Compact gives %q", data, !want, compact.Bytes())
		}
	})
}
