package ids_test

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/schemas"
)

// FuzzValid holds the hand-written Valid (no regular expression on the
// hot path) to Pattern: each accepts exactly what the other does.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "a", "A-1", "-a", ".a", "a b", "a/b", "a:b._-c", "é", "a\x00",
		strings.Repeat("a", 200), strings.Repeat("a", 201), "a\n"} {
		f.Add(s)
	}
	re := regexp.MustCompile(ids.Pattern)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ids.Valid(s), re.MatchString(s); got != want {
			t.Fatalf("Valid(%q) = %v, Pattern says %v", s, got, want)
		}
	})
}

// The JSON Schemas spell the identifier rule as ids.Pattern: every pattern
// of the schema files that holds the identifier's characters holds the
// whole rule, and the two files that carry it (the shared definitions, and
// the mutation id of the responses) still do.
func TestSchemasCarryPattern(t *testing.T) {
	rule := strings.TrimSuffix(strings.TrimPrefix(ids.Pattern, "^"), "$")
	const chars = "[A-Za-z0-9._:-]"
	require.Contains(t, rule, chars)
	carriers := map[string]int{}
	err := fs.WalkDir(schemas.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".json") {
			return err
		}
		b, err := fs.ReadFile(schemas.FS, name)
		require.NoError(t, err)
		var doc any
		require.NoError(t, json.Unmarshal(b, &doc), name)
		for _, p := range patterns(doc) {
			if strings.Contains(p, chars) {
				require.Contains(t, p, rule, "%s: a pattern with the identifier's characters that is not ids.Pattern", name)
				carriers[name]++
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"defs.json": 2, "responses.json": 2}, carriers)

	var defs struct {
		Defs map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"$defs"`
	}
	b, err := fs.ReadFile(schemas.FS, "defs.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &defs))
	require.Equal(t, ids.Pattern, defs.Defs["id"].Pattern)
	require.Equal(t, ids.Pattern, defs.Defs["idOrNull"].Pattern)
}

// patterns are the values of every "pattern" member in a JSON document.
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
