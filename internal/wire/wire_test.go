package wire_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/wire"
	"github.com/foodsafe/foodsafe/schemas"
)

// timestampPattern is the rule ParseMillis is held to: the one the
// schemas and the OpenAPI document publish.
var timestampPattern = regexp.MustCompile(wire.TimestampPattern)

// The schemas repeat the timestamp's pattern (JSON Schema has no way to
// import a Go constant): every pattern of theirs on the timestamp's digits
// is wire.TimestampPattern, or, for a stream position (never 0), the same
// digits without the "0" alternative.
func TestSchemasCarryTimestampPattern(t *testing.T) {
	digits, ok := strings.CutPrefix(wire.TimestampPattern, "^(0|")
	digits, ok2 := strings.CutSuffix(digits, ")$")
	if !ok || !ok2 {
		t.Fatalf("wire.TimestampPattern %q is no longer ^(0|DIGITS)$; update this test", wire.TimestampPattern)
	}
	position := "^" + digits + "$"
	carriers := map[string]int{}
	err := fs.WalkDir(schemas.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".json") {
			return err
		}
		b, err := fs.ReadFile(schemas.FS, name)
		if err != nil {
			return err
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return err
		}
		for _, p := range patterns(doc) {
			if !strings.Contains(p, "{0,18}") {
				continue
			}
			if p != wire.TimestampPattern && p != position {
				t.Errorf("%s: timestamp pattern %q is neither wire.TimestampPattern nor its positive form %q", name, p, position)
			}
			carriers[name]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// defs.json: timestamp, timestampOrNull; responses.json: two
	// sequences, the changes head and the records feed's stream head.
	if want := map[string]int{"defs.json": 2, "responses.json": 4}; !maps.Equal(carriers, want) {
		t.Errorf("schemas carrying the timestamp pattern: %v, want %v", carriers, want)
	}
}

// patterns are the values of every "pattern" keyword in a JSON document.
func patterns(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if s, ok := c.(string); ok && k == "pattern" {
				out = append(out, s)
			}
			out = append(out, patterns(c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, patterns(c)...)
		}
	}
	return out
}

// FuzzParseMillis holds ParseMillis to its rule: the wire pattern, and
// within int64.
func FuzzParseMillis(f *testing.F) {
	for _, s := range []string{"0", "1", "01", "-1", "+1", "9223372036854775807", "9223372036854775808", "1e3", " 1", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := wire.ParseMillis(s)
		n, perr := strconv.ParseInt(s, 10, 64)
		want := timestampPattern.MatchString(s) && perr == nil
		if (err == nil) != want {
			t.Fatalf("ParseMillis(%q) error %v, want accepted=%v", s, err, want)
		}
		if err == nil && int64(got) != n {
			t.Fatalf("ParseMillis(%q) = %d, want %d", s, got, n)
		}
	})
}
