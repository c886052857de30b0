package wire_test

import (
	"encoding/hex"
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

// Integer is the plain text of an integral value in any notation, and
// refuses a value with a fraction.
func TestDecimalInteger(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0": "0", "-0": "0", "-0.0": "0", "0E0": "0", "0.000e-5": "0", "1": "1", "1.0": "1", "1E2": "100", "1e+2": "100",
		"2.50e1": "25", "-7.000": "-7", "-1.5e1": "-15", "9007199254740991.0": "9007199254740991", "12.34e2": "1234",
		"100e-2": "1", "1.7976931348623157e308": "17976931348623157" + strings.Repeat("0", 292),
	} {
		d, ok := wire.ParseDecimal(in)
		if !ok {
			t.Fatalf("ParseDecimal(%q) refused", in)
		}
		got, integral := d.Integer()
		if !integral || got != want {
			t.Errorf("ParseDecimal(%q).Integer() = %q, %v; want %q", in, got, integral, want)
		}
	}
	for _, frac := range []string{"1.5", "0.1", "1e-1", "-2.50", "12.345e2", "5e-324"} {
		d, _ := wire.ParseDecimal(frac)
		if got, integral := d.Integer(); integral {
			t.Errorf("ParseDecimal(%q).Integer() = %q, an integer", frac, got)
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

// FuzzCanonicalDocument holds the request digest to what it was before
// CanonicalDocument: for any object a json.Decoder with UseNumber reads
// (validate.Decode's), CanonicalDocument gives the bytes CanonicalJSON
// gives for json.Marshal of it, so a replay of a mutation stored earlier
// still matches its digest. The seeds spell numbers every way JSON allows
// and strings every way encoding/json treats specially.
func FuzzCanonicalDocument(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"n":[0,-0,-0.0,0.0,0e0,-0E-0,1,-1,1.50,15e-1,1E+2,1e2,100,1e-7,0.0000001,1e400,-1e-400,1E9999999999999]}`,
		`{"big":[123456789012345678901234567890,-9223372036854775808,9223372036854775807,18446744073709551616,1.7976931348623157e308,5e-324]}`,
		`{"long":0.` + strings.Repeat("1234567890", 30) + `,"longer":-` + strings.Repeat("9", 300) + `.` + strings.Repeat("0", 300) + `e-300}`,
		`{"b":{"z":[[[]]],"a":[{}]},"a":[null,true,false,"",[1,[2,[3.0]]]],"":{"":""}}`,
		`{"s":"<b>&amp;</b> \u003c\u003e\u0026 \u2028\u2029 é \u00e9 😀 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t \u0000\u001f\u007f"}`,
		`{"lone":"\ud800","pair":"\udc00\ud800","bad":"\uDFFF x \uD83D"}`,
		"{\"raw\":\"a\xffb\xc0\xaf\xed\xa0\x80\",\"k\xfe\":1}",
		`{"keys":{"\ufffd":1,"\ud800":2,"é":3,"e\u0301":4,"A":5,"a":6,"\u2028":7}}`,
		`{"dup":1,"dup":2.0,"num":"1.50","str":"1e2"}`,
		` { "spaced" : [ 1 , 2.50 ] , "x" : { } } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil || doc == nil {
			return
		}
		encoded, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("json.Marshal of a decoded document: %v", err)
		}
		want, wantErr := wire.CanonicalJSON(encoded)
		got, gotErr := wire.CanonicalDocument(doc)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: CanonicalDocument error %v, CanonicalJSON error %v", body, gotErr, wantErr)
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\nCanonicalDocument %s\nCanonicalJSON     %s", body, got, want)
		}
	})
}

// RequestDigest is one rule whatever form the request arrives in: a
// decoded document and the typed value it decodes into hash alike, equal
// values written differently hash alike, and different values do not.
func TestRequestDigest(t *testing.T) {
	t.Parallel()
	decode := func(s string) map[string]any {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	digest := func(v any) string {
		d, err := wire.RequestDigest(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) != 32 {
			t.Fatalf("digest of %d bytes", len(d))
		}
		return string(d)
	}
	a := digest(decode(`{"b":[3.50,{"y":1,"x":"é"}],"a":true}`))
	if b := digest(decode(`{ "a" : true, "b" : [ 35e-1, {"x":"\u00e9","y":1.0} ] }`)); a != b {
		t.Error("equal values written differently hash differently")
	}
	if c := digest(decode(`{"b":[3.51,{"y":1,"x":"é"}],"a":true}`)); a == c {
		t.Error("different values hash alike")
	}
	d := wire.Delivery{ID: "d1", RestaurantID: "r1", OccurredAt: 7, Supplier: wire.Supplier{ID: "s", Name: "S"},
		TemperatureRecords:   []wire.TemperatureRecord{{Product: "p", Unit: "C", Value: "3.50"}},
		NonComplianceReasons: []string{}, CorrectiveActions: []string{"x"}}
	plain, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if digest(d) != digest(decode(string(plain))) {
		t.Error("a typed value and its document hash differently")
	}
}

// A delivery's content digest is the digest of what its provider sent,
// the one stored before the service sent receivedAt (the hex was computed
// by RequestDigest of this delivery when Delivery had no ReceivedAt):
// receivedAt, the service's, changes nothing in it, so a replay of a
// delivery stored then is still a replay.
func TestDeliveryContentDigestLeavesReceivedAtOut(t *testing.T) {
	t.Parallel()
	c := "note"
	d := wire.Delivery{ID: "d1", RestaurantID: "r1", OccurredAt: 1763710200000, IsCompliant: true, Supplier: wire.Supplier{ID: "s", Name: "S"},
		TemperatureRecords:   []wire.TemperatureRecord{{Product: "p", LotNumber: "L", Unit: "C", Value: "3.50"}},
		NonComplianceReasons: []string{}, CorrectiveActions: []string{"x"}, Commentary: &c, ImageCount: 2}
	const stored = "6ba37a4ca0b2d231795e29aab9fe8328ede18356c26e6fc95dace66285321082"
	for _, at := range []wire.Millis{0, 1763720000000} {
		d.ReceivedAt = at
		got, err := d.ContentDigest()
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != stored {
			t.Errorf("receivedAt %d: content digest %x, stored digests are %s", at, got, stored)
		}
	}
	// The member is in the delivery's JSON all the same, and the plain
	// request digest of that JSON differs: ContentDigest is what leaves
	// it out.
	plain, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain), `"receivedAt":"1763720000000"`) {
		t.Errorf("receivedAt missing from %s", plain)
	}
	if all, err := wire.RequestDigest(d); err != nil || hex.EncodeToString(all) == stored {
		t.Errorf("RequestDigest of the whole delivery (%x, %v) ignores receivedAt", all, err)
	}
	// Anything the provider sent still counts.
	d.ImageCount = 3
	if got, err := d.ContentDigest(); err != nil || hex.EncodeToString(got) == stored {
		t.Errorf("a different imageCount hashed alike (%v)", err)
	}
}
