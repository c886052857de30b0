package validate_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// A bundled data schema compiles on its own, with no way to load another
// document, and judges data as the service does: each collection's example
// record passes both, and the same data with a member too many, or with a
// member of the wrong type, fails both. It logs the bundles' total size
// (go test -v -run TestBundleStandsAlone ./internal/validate/).
func TestBundleStandsAlone(t *testing.T) {
	set, err := validate.Load()
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, c := range catalog.Collections {
		raw, err := set.Bundle(c.Name + ".data")
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		size += len(raw)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		comp := jsonschema.NewCompiler()
		comp.UseLoader(noLoader{})
		if err := comp.AddResource("bundle.json", doc); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		sch, err := comp.Compile("bundle.json")
		if err != nil {
			t.Fatalf("%s: the bundle does not stand alone: %v", c.Name, err)
		}
		good := examples.Of(c.Name).Data
		extra := maps.Clone(good)
		extra["notAMember"] = true
		wrong := maps.Clone(good)
		for k := range wrong {
			wrong[k] = []any{[]any{}} // no member of any collection is a list of lists
			break
		}
		for name, data := range map[string]map[string]any{"example": good, "member too many": extra, "wrong type": wrong} {
			v := roundTrip(t, data)
			service := set.Valid(c.Name+".data", v)
			if service != (name == "example") {
				t.Fatalf("%s %s: the service's schema says valid=%v", c.Name, name, service)
			}
			if bundled := sch.Validate(v) == nil; bundled != service {
				t.Fatalf("%s %s: the bundle says valid=%v, the service %v", c.Name, name, bundled, service)
			}
		}
	}
	t.Logf("the 24 bundled data schemas: %d bytes", size)
	if _, err := set.Bundle("defs"); err == nil {
		t.Fatal("defs.json is not a body schema")
	}
	if _, err := set.Bundle("fridges.data"); err == nil {
		t.Fatal("no such schema")
	}
}

// noLoader refuses every document a compiler would fetch.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, &jsonschema.LoadURLError{URL: url} }

func roundTrip(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}
