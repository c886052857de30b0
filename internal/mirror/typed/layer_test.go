package typed

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/schemas"
)

// schemaLeaves lists, independently of the layer's own derivation, every
// member of a schema that holds a value: "name", "asset.sha256",
// "temperatureRecords[].value", "closingDays[]".
func schemaLeaves(t *testing.T, defs map[string]any, s map[string]any, prefix string) []string {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		_, name, _ := strings.Cut(ref, "#/$defs/")
		def, ok := defs[name].(map[string]any)
		if !ok {
			t.Fatalf("%s: unknown $ref %s", prefix, ref)
		}
		s = def
	}
	var out []string
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		for name, p := range props {
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			out = append(out, schemaLeaves(t, defs, p.(map[string]any), path)...)
		}
		return out
	}
	if items, ok := s["items"].(map[string]any); ok && !strings.Contains(prefix, ".") && !strings.Contains(prefix, "[]") {
		return schemaLeaves(t, defs, items, prefix+"[]")
	}
	return []string{prefix}
}

// Every member of every collection's schema, and of the delivery's, is a
// column of the typed layer (or the elements of a child relation), so a
// field added to a schema cannot be silently left out; every name is
// lower-case snake case within PostgreSQL's 63 bytes, unique where it
// must be.
func TestTypedLayerCoversEverySchemaMember(t *testing.T) {
	var defs struct {
		Defs map[string]any `json:"$defs"`
	}
	b, err := fs.ReadFile(schemas.FS, "defs.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &defs); err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(schemas.FS, "*.data.json")
	if len(files) != 24 {
		t.Fatalf("%d collection schemas, want 24", len(files))
	}
	sources := map[string]string{DeliveriesSource: "delivery.json"}
	for _, f := range files {
		sources[strings.TrimSuffix(f, ".data.json")] = f
	}
	if got := Sources(); !reflect.DeepEqual(got, slices.Sorted(mapKeysOf(sources))) {
		t.Fatalf("typed sources %v", got)
	}
	ident := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for source, file := range sources {
		b, err := fs.ReadFile(schemas.FS, file)
		if err != nil {
			t.Fatal(err)
		}
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			t.Fatal(err)
		}
		from := map[string]bool{}
		rels := Of(source)
		if len(rels) == 0 || rels[0].Parent != "" || rels[0].Name != "typed_"+TableName(source) {
			t.Fatalf("%s: relations %v", source, rels)
		}
		for _, r := range rels {
			if !ident.MatchString(r.Name) || len(r.Name) > 63 {
				t.Errorf("relation name %q", r.Name)
			}
			if r.Parent != "" && r.Parent != rels[0].Name {
				t.Errorf("%s: parent %s", r.Name, r.Parent)
			}
			for _, c := range r.Columns {
				if !ident.MatchString(c.Name) || len(c.Name) > 63 || reservedWords[c.Name] {
					t.Errorf("%s: column name %q", r.Name, c.Name)
				}
				if c.src == fromData {
					from[strings.TrimPrefix(strings.TrimPrefix(c.From, "data."), "data")] = true
				}
			}
			for _, ix := range r.Indexes {
				for _, c := range r.Columns {
					if c.Name == ix[len(ix)-1] && c.Kind == Text && !c.identifier {
						t.Errorf("%s: index on %s, a free text that may not fit an index entry", r.Name, c.Name)
					}
				}
			}
		}
		for _, leaf := range schemaLeaves(t, defs.Defs, root, "") {
			if source == DeliveriesSource && (leaf == "id" || leaf == "restaurantId") {
				continue // the key columns
			}
			if !from[leaf] {
				t.Errorf("%s: member %s is in no typed column (columns come from %v)", source, leaf, slices.Sorted(mapKeysOf(from)))
			}
		}
	}
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The columns of one relation, as a partner reads them in the guide.
func TestTypedTemperatureRecords(t *testing.T) {
	var got []string
	kinds := map[Kind]string{Text: "text", Integer: "integer", Number: "number", Boolean: "boolean", Time: "time", Millis: "millis", JSON: "json"}
	for _, c := range Of("temperature-records")[0].Columns {
		got = append(got, c.Name+" "+kinds[c.Kind])
	}
	want := []string{"restaurant_id text", "id text", "timestamp time", "timestamp_ms millis", "value number", "unit text", "shift text",
		"equipment_id text", "user_id text", "sequence integer", "captured_at time", "captured_at_ms millis", "received_at time", "received_at_ms millis"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("typed_temperature_records columns\n got %v\nwant %v", got, want)
	}
	child := Of("temperature-records")[1]
	if child.Name != "typed_temperature_records_corrective_actions" || !reflect.DeepEqual(child.KeyColumns(), []string{"restaurant_id", "parent_id", "ordinal"}) {
		t.Errorf("child %s keyed by %v", child.Name, child.KeyColumns())
	}
	if got := Of(DeliveriesSource)[0].Indexes; !reflect.DeepEqual(got, [][]string{{"restaurant_id", "occurred_at"}, {"restaurant_id", "supplier_id"}}) {
		t.Errorf("typed_deliveries indexes %v", got)
	}
}

// Values are read as their column's type whatever number form or range
// they came in; what does not fit is null, never an error.
func TestTypedConvert(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 5, 0, 123e6, time.UTC)
	for _, tc := range []struct {
		kind Kind
		raw  string
		want any
	}{
		{Integer, `7`, int64(7)}, {Integer, `1.0`, int64(1)}, {Integer, `1E2`, int64(100)}, {Integer, `-0.0`, int64(0)},
		{Integer, `2.5`, nil}, {Integer, `"7"`, nil}, {Integer, `1e30`, nil}, {Integer, `null`, nil},
		{Number, `3.5`, 3.5}, {Number, `1E+2`, 100.0}, {Number, `-0.0`, 0.0}, {Number, `1e400`, nil}, {Number, `true`, nil},
		{Boolean, `true`, true}, {Boolean, `false`, false}, {Boolean, `0`, nil},
		{Text, `"°C"`, "°C"}, {Text, `"a\u00e9\n"`, "aé\n"}, {Text, `12`, nil},
		{Time, `"1795766700123"`, at}, {Millis, `"1795766700123"`, int64(1795766700123)},
		{Time, `"253402300799999"`, time.UnixMilli(253402300799999).UTC()}, {Time, `"253402300800000"`, nil},
		{Millis, `"253402300800000"`, int64(253402300800000)}, {Millis, `"9999999999999999999"`, nil}, {Time, `123`, nil},
		{JSON, `[ "a" , {"b" : 1.0} ]`, `["a",{"b":1.0}]`}, {JSON, `null`, nil},
	} {
		if got := convert(tc.kind, json.RawMessage(tc.raw)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("convert(%d, %s) = %#v, want %#v", tc.kind, tc.raw, got, tc.want)
		}
	}
}

// The reference page says of every column what its type is, never what
// the wire form of its member was: a time column (timestamptz, ISO text,
// a Parquet timestamp) holds an instant and is not "epoch milliseconds",
// and an epoch ms column says it is. Read from the page as generated, so
// the page and the types cannot disagree; the schemas' own wording
// ("When the delivery was checked, epoch milliseconds; ...") is their
// wire form and is what the generator must not copy.
func TestDescriptionsFollowKinds(t *testing.T) {
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)`(?: \\(key\\))? \\| ([a-zA-Z ]+) \\| `[^`]*` \\| (.*) \\|$")
	names := map[string]Kind{}
	for k, d := range kindDoc {
		names[d[0]] = k
	}
	columns := 0
	for _, line := range strings.Split(string(Doc()), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		columns++
		kind, ok := names[m[2]]
		if !ok {
			t.Errorf("%s: type %q is not a kind's", m[1], m[2])
			continue
		}
		saysEpoch := strings.Contains(strings.ToLower(m[3]), "epoch")
		if saysEpoch != (kind == Millis) {
			t.Errorf("%s, a %s column, is described as %q", m[1], m[2], m[3])
		}
	}
	if columns < 100 {
		t.Fatalf("read %d column rows from the page: its table changed shape", columns)
	}
	for _, r := range Relations() {
		for _, c := range r.Columns {
			if strings.TrimSpace(c.Description) == "" || strings.HasPrefix(c.Description, ",") {
				t.Errorf("%s.%s: description %q", r.Name, c.Name, c.Description)
			}
		}
	}
}
