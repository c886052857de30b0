package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/foodsafe/foodsafe/internal/wire"
)

// Integers is the step after validation that gives integer fields their
// integer form. JSON Schema calls 1.0, 1E2 and 2.50e1 integers (their
// values are), so the schemas accept them where they say `type: integer`;
// but a typed client decoding such a field into an integer fails on any
// text with a fraction or an exponent (Go's encoding/json: "cannot
// unmarshal number 1.0 into ... int64"; oapi-codegen, serde and Jackson
// alike). So a number the named schema types as an integer, and as
// nothing wider, is rewritten in doc (a document Decode returned and the
// schema accepted, numbers as json.Number) to its plain integer text:
// 1.0 -> 1, 1E2 -> 100, 2.50e1 -> 25, -0.0 and 0E0 -> 0. A value with a
// fraction never gets here: the schema refuses it (400). Every other
// number keeps its text.
//
// The answer maps the JSON Pointer of each rewritten number (relative to
// doc) to its new text, for ReplaceNumbers to apply to the text a record
// is stored as; empty when there was nothing to rewrite. Request digests
// are unaffected: they compare values (wire.CanonicalJSON), and 1.0 and 1
// are one value, so replays of mutations stored before this step still
// match.
func (s *Set) Integers(name string, doc any) map[string]string {
	sch, ok := s.compiled[name]
	if !ok {
		panic("schema: unknown schema " + name)
	}
	var out map[string]string
	integerForms(sch, doc, "", &out, 0)
	return out
}

// maxSchemaDepth bounds the walk through references: the schemas have no
// recursion, but a walk must not depend on that.
const maxSchemaDepth = 64

// integerForms walks v with the subschemas that apply to it (references,
// allOf, the branches of anyOf and oneOf that accept v, the branch of
// if/then/else that applies, and those of object members and array
// items) and returns v with every number one of them types as an
// integer, and not as a number, in its plain integer text; containers are
// rewritten in place.
func integerForms(sch *jsonschema.Schema, v any, ptr string, out *map[string]string, depth int) any {
	if sch == nil || depth > maxSchemaDepth {
		return v
	}
	depth++
	if n, ok := v.(json.Number); ok && typedInteger(sch) {
		if text, ok := integerText(n); ok {
			v = json.Number(text)
			record(out, ptr, text)
		}
	}
	if sch.Ref != nil {
		v = integerForms(sch.Ref, v, ptr, out, depth)
	}
	for _, sub := range sch.AllOf {
		v = integerForms(sub, v, ptr, out, depth)
	}
	for _, branches := range [][]*jsonschema.Schema{sch.AnyOf, sch.OneOf} {
		for _, sub := range branches {
			if sub.Validate(v) == nil {
				v = integerForms(sub, v, ptr, out, depth)
			}
		}
	}
	if sch.If != nil {
		if sch.If.Validate(v) == nil {
			v = integerForms(sch.Then, v, ptr, out, depth)
		} else {
			v = integerForms(sch.Else, v, ptr, out, depth)
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for k := range t {
			for _, sub := range memberSchemas(sch, k) {
				t[k] = integerForms(sub, t[k], ptr+"/"+escape(k), out, depth)
			}
		}
	case []any:
		for i := range t {
			t[i] = integerForms(itemSchema(sch, i), t[i], ptr+"/"+strconv.Itoa(i), out, depth)
		}
	}
	return v
}

// memberSchemas are the subschemas of sch that apply to member k.
func memberSchemas(sch *jsonschema.Schema, k string) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	p, named := sch.Properties[k]
	if named {
		out = append(out, p)
	}
	matched := false
	for re, p := range sch.PatternProperties {
		if re.MatchString(k) {
			out, matched = append(out, p), true
		}
	}
	if ap, ok := sch.AdditionalProperties.(*jsonschema.Schema); ok && !named && !matched {
		out = append(out, ap)
	}
	return out
}

// itemSchema is the subschema of sch for item i of an array.
func itemSchema(sch *jsonschema.Schema, i int) *jsonschema.Schema {
	if i < len(sch.PrefixItems) {
		return sch.PrefixItems[i]
	}
	if sch.Items2020 != nil {
		return sch.Items2020
	}
	switch items := sch.Items.(type) {
	case *jsonschema.Schema:
		return items
	case []*jsonschema.Schema:
		if i < len(items) {
			return items[i]
		}
	}
	return nil
}

// typedInteger reports whether sch says `type: integer` (possibly with
// null, never with number).
func typedInteger(sch *jsonschema.Schema) bool {
	if sch.Types == nil || sch.Types.IsEmpty() {
		return false
	}
	ts := sch.Types.ToStrings()
	return slices.Contains(ts, "integer") && !slices.Contains(ts, "number")
}

// integerText is n's plain integer text, when n is integral and not
// already in that form.
func integerText(n json.Number) (string, bool) {
	d, ok := wire.ParseDecimal(string(n))
	if !ok {
		return "", false
	}
	text, integral := d.Integer()
	return text, integral && text != string(n)
}

func record(out *map[string]string, ptr, text string) {
	if *out == nil {
		*out = map[string]string{}
	}
	(*out)[ptr] = text
}

// ReplaceNumbers returns raw, the JSON text of a value, with the number at
// each JSON Pointer of with (relative to the value) replaced by its text
// there, and every other byte as it was: a record's data is stored as
// sent, but for its integer fields (Set.Integers). raw itself is returned
// when with is empty.
func ReplaceNumbers(raw []byte, with map[string]string) ([]byte, error) {
	if len(with) == 0 {
		return raw, nil
	}
	d := jsontext.NewDecoder(bytes.NewReader(raw))
	out := make([]byte, 0, len(raw))
	last, done := 0, 0
	for {
		tok, err := d.ReadToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if tok.Kind() != '0' {
			continue
		}
		text, ok := with[string(d.StackPointer())]
		if !ok {
			continue
		}
		end := int(d.InputOffset())
		start := end - len(tok.String())
		out = append(append(out, raw[last:start]...), text...)
		last = end
		done++
	}
	if done != len(with) {
		return nil, fmt.Errorf("validate: %d of %d numbers to rewrite found in the text", done, len(with))
	}
	return append(out, raw[last:]...), nil
}
