package store

import (
	"encoding/json"
	"testing"
)

// withMember replaces only the named member and copies the rest byte for
// byte, in place.
func TestWithMemberKeepsTheRest(t *testing.T) {
	asset := json.RawMessage(`{"objectKey":"k","status":"pending"}`)
	for _, c := range []struct{ in, want string }{
		{`{"z":1E+2,"asset":{"objectKey":"k","status":"x"},"a":-0.0}`, `{"z":1E+2,"asset":{"objectKey":"k","status":"pending"},"a":-0.0}`},
		{`{"z":"\u00e9","n":1e-7}`, `{"z":"\u00e9","n":1e-7,"asset":{"objectKey":"k","status":"pending"}}`},
		{`{}`, `{"asset":{"objectKey":"k","status":"pending"}}`},
		{`{"as\u0073et":null,"b":[1,2.50]}`, `{"as\u0073et":{"objectKey":"k","status":"pending"},"b":[1,2.50]}`},
	} {
		got, err := withMember(json.RawMessage(c.in), "asset", asset)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.in, got, c.want)
		}
	}
	if _, err := withMember(json.RawMessage(`[1]`), "asset", asset); err == nil {
		t.Error("an array was taken for an object")
	}
}
