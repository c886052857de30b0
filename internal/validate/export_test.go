package validate

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// CompileForTest is a Set of one schema given as text, for tests of
// schema shapes the embedded schemas do not have.
func CompileForTest(name, schema string) (*Set, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(name+".json", doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(name + ".json")
	if err != nil {
		return nil, err
	}
	return &Set{compiled: map[string]*jsonschema.Schema{name: sch}}, nil
}

// DecodeReadingTwice is Decode and DecodeKeeping's member as they were
// before the body was read once: encoding/json's document, then the
// strict reader's checks, then the member read again. FuzzDecodeReadsOnce
// holds DecodeKeeping to it.
func DecodeReadingTwice(body []byte, keep string) (map[string]any, []byte, error) {
	if err := Bounds(body); err != nil {
		return nil, nil, err
	}
	doc, err := refusal(body)
	if err != nil {
		return nil, nil, err
	}
	raw, err := rawMember(body, keep)
	return doc, raw, err
}
