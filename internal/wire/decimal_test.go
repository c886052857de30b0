package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/wire"
)

func TestDecimal(t *testing.T) {
	t.Parallel()
	for in, canonical := range map[string]string{
		"0": "0", "-0.0": "0", "0e-20000": "0",
		"1.5": "15e-1", "1.50": "15e-1", "15e-1": "15e-1", "0.15E1": "15e-1",
		"100": "1e2", "1E2": "1e2", "1e+2": "1e2", "-100.00": "-1e2",
		"0.001": "1e-3", "0.001e5": "1e2",
		"12345678901234567890.123456789": "12345678901234567890123456789e-9",
		"1e400":                          "1e400",
	} {
		d, ok := wire.ParseDecimal(in)
		if !ok {
			t.Fatalf("ParseDecimal(%q) refused", in)
		}
		if d.Canonical() != canonical {
			t.Errorf("ParseDecimal(%q).Canonical() = %s, want %s", in, d.Canonical(), canonical)
		}
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1.5.5", "0x10", "1e99999999999999", "NaN", "1_0"} {
		if _, ok := wire.ParseDecimal(bad); ok {
			t.Errorf("ParseDecimal(%q) accepted", bad)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	a, err := wire.CanonicalJSON([]byte(`{"b":[1.50, 2], "a": {"y": 1E2, "x": "1.50"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.CanonicalJSON([]byte(`{"a":{"x":"1.50","y":100.0},"b":[15e-1,2.000]}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("equal values, different canonical forms:\n%s\n%s", a, b)
	}
	if want := `{"a":{"x":"1.50","y":1e2},"b":[15e-1,2e0]}`; string(a) != want {
		t.Fatalf("canonical form %s, want %s", a, want)
	}
	c, _ := wire.CanonicalJSON([]byte(`{"a":{"x":"1.5","y":100},"b":[1.5,2]}`))
	if string(a) == string(c) {
		t.Fatal("a string's text is not a number: 1.50 and 1.5 as strings differ")
	}
}

// A decoded document's canonical form is the one CanonicalJSON gives for
// its encoding: request digests do not change with the shortcut.
func TestCanonicalDocumentIsCanonicalJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{}`,
		`{"b":[1.50, 2, -0, 1e400, 0.000e-9], "a": {"y": 1E2, "x": "1.50"}, "n": null, "t": true, "f": false}`,
		`{"html":"<b>&amp;</b> \u2028 é \"q\" \\ \n","deep":[[[{"z":[]}]]],"big":123456789012345678901234567890}`,
	} {
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		encoded, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := wire.CanonicalJSON(encoded)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.CanonicalDocument(doc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\nCanonicalDocument %s\nCanonicalJSON     %s", body, got, want)
		}
	}
}
