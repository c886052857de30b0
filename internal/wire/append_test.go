package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
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
	// Every field of Envelope is set in one of the envelopes above: a
	// field left zero everywhere would hide one AppendJSON forgot.
	live, gone := reflect.ValueOf(pages[1].Data[0]), reflect.ValueOf(pages[1].Data[1])
	for i := 0; i < live.NumField(); i++ {
		if live.Field(i).IsZero() && gone.Field(i).IsZero() {
			t.Errorf("set Envelope.%s in this test", live.Type().Field(i).Name)
		}
	}
}

func TestAppendJSONRefusesInvalidUTF8(t *testing.T) {
	_, err := Envelope{ID: "bad\xff"}.AppendJSON(nil)
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}
