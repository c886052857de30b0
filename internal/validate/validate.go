// Package schema compiles the embedded JSON Schemas once and validates
// request bodies against them, reporting every violation with an RFC 6901
// pointer. Validation uses github.com/santhosh-tekuri/jsonschema/v6
// (maintained, draft 2020-12).
package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/schemas"
)

// maxNumberLen bounds the text of a JSON number; a double needs far fewer.
const maxNumberLen = 100

var printer = message.NewPrinter(language.English)

// Set is the compiled schemas, by file name without ".json".
type Set struct {
	compiled map[string]*jsonschema.Schema
	// Docs are the raw schema documents by name, for the OpenAPI document.
	Docs map[string]map[string]any
}

// Load compiles every embedded schema. It fails at start-up, not at the
// first request, when a schema is broken.
func Load() (*Set, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	files, err := fs.Glob(schemas.FS, "*.json")
	if err != nil {
		return nil, err
	}
	set := &Set{compiled: map[string]*jsonschema.Schema{}, Docs: map[string]map[string]any{}}
	ids := map[string]string{}
	for _, f := range files {
		b, err := fs.ReadFile(schemas.FS, f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", f, err)
		}
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: not an object", f)
		}
		id, _ := m["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("schema %s: missing $id", f)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", f, err)
		}
		name := strings.TrimSuffix(path.Base(f), ".json")
		ids[name] = id
		var plain map[string]any
		if err := json.Unmarshal(b, &plain); err != nil {
			return nil, err
		}
		set.Docs[name] = plain
	}
	// Definitions that also rule values outside bodies (a query parameter
	// naming an asset) are compiled on their own.
	for name, ref := range map[string]string{"objectKey": "defs#/$defs/objectKey"} {
		doc, frag, _ := strings.Cut(ref, "#")
		ids[name] = ids[doc] + "#" + frag
	}
	for name, id := range ids {
		sch, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", name, err)
		}
		set.compiled[name] = sch
	}
	return set, nil
}

// Valid reports whether v satisfies the named schema.
func (s *Set) Valid(name string, v any) bool {
	return len(s.Validate(name, v, "")) == 0
}

// Has reports whether a schema of that name exists.
func (s *Set) Has(name string) bool {
	_, ok := s.compiled[name]
	return ok
}

// Decode parses a request body into the generic form the validator reads.
// The body must be one JSON object. Numbers must be finite doubles written
// in at most 100 characters: that is what a JSON number means to clients,
// and it keeps every value storable in PostgreSQL jsonb (whose numeric type
// overflows on e.g. 1e-20000) and cheap to validate. Numbers are rewritten
// in their shortest round-trip form (as JavaScript prints them: 3.50 -> 3.5,
// 1E2 -> 100), so equal values compare equal when a replay is checked.
func Decode(body []byte) (map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "The body is not valid JSON: %s.", jsonErrorText(err))
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "The body must be a JSON object.")
	}
	var errs []apperr.FieldError
	checkStorable(obj, "", &errs)
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Pointer < errs[j].Pointer })
		return nil, Invalid(errs)
	}
	return obj, nil
}

func jsonErrorText(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// nulDetail explains the one character PostgreSQL text and jsonb refuse.
const nulDetail = "must not contain the NUL character (U+0000)"

// checkStorable walks a decoded body: numbers are made canonical (or
// refused, see Decode), and strings or member names holding NUL, which
// PostgreSQL cannot store, are refused.
func checkStorable(v any, ptr string, errs *[]apperr.FieldError) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			at := ptr + "/" + escape(k)
			if strings.ContainsRune(k, 0) {
				*errs = append(*errs, apperr.FieldError{Pointer: at, Detail: "member name " + nulDetail})
				continue
			}
			if n, ok := c.(json.Number); ok {
				t[k] = canonicalNumber(n, at, errs)
				continue
			}
			checkStorable(c, at, errs)
		}
	case []any:
		for i, c := range t {
			at := ptr + "/" + strconv.Itoa(i)
			if n, ok := c.(json.Number); ok {
				t[i] = canonicalNumber(n, at, errs)
				continue
			}
			checkStorable(c, at, errs)
		}
	case string:
		if strings.ContainsRune(t, 0) {
			*errs = append(*errs, apperr.FieldError{Pointer: ptr, Detail: nulDetail})
		}
	}
}

func canonicalNumber(n json.Number, ptr string, errs *[]apperr.FieldError) json.Number {
	f, ok := usableNumber(string(n))
	if !ok {
		*errs = append(*errs, apperr.FieldError{Pointer: ptr,
			Detail: "number out of range: numbers must be finite IEEE-754 doubles written in at most 100 characters"})
		return n
	}
	return json.Number(FormatNumber(f))
}

// usableNumber parses s, rejecting overflow to infinity and non-zero
// values that underflow to zero.
func usableNumber(s string) (float64, bool) {
	if len(s) > maxNumberLen {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	if f == 0 {
		mant := s
		if i := strings.IndexAny(mant, "eE"); i >= 0 {
			mant = mant[:i]
		}
		return 0, strings.Trim(mant, "-+0.") == ""
	}
	return f, true
}

// FormatNumber prints a double the way JavaScript does: plain decimals
// between 1e-6 and 1e21, exponent form outside, and 0 for -0.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Validate checks doc against the named schema and returns every violation,
// pointers prefixed with prefix (e.g. "/data"), sorted by pointer.
func (s *Set) Validate(name string, doc any, prefix string) []apperr.FieldError {
	sch, ok := s.compiled[name]
	if !ok {
		panic("schema: unknown schema " + name)
	}
	err := sch.Validate(doc)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []apperr.FieldError{{Pointer: prefix, Detail: err.Error()}}
	}
	var out []apperr.FieldError
	collect(ve, prefix, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return dedupe(out)
}

// collect flattens the error tree into its leaves, one per violation.
// Missing and unexpected members point at the member itself.
func collect(e *jsonschema.ValidationError, prefix string, out *[]apperr.FieldError) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, prefix, out)
		}
		return
	}
	at := prefix + pointer(e.InstanceLocation)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, apperr.FieldError{Pointer: at + "/" + escape(m), Detail: "required member is missing"})
		}
	case *kind.AdditionalProperties:
		for _, m := range k.Properties {
			*out = append(*out, apperr.FieldError{Pointer: at + "/" + escape(m), Detail: "unknown member; no additional properties are allowed"})
		}
	default:
		*out = append(*out, apperr.FieldError{Pointer: at, Detail: e.ErrorKind.LocalizedString(printer)})
	}
}

func dedupe(in []apperr.FieldError) []apperr.FieldError {
	out := in[:0]
	for i, e := range in {
		if i > 0 && e == in[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

func pointer(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		b.WriteString(escape(p))
	}
	return b.String()
}

// escape encodes a member name for a JSON Pointer (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Invalid is the 400 for a list of body violations.
func Invalid(errs []apperr.FieldError) *apperr.Error {
	return &apperr.Error{Code: apperr.Invalid,
		Detail: fmt.Sprintf("The body is invalid: %d violation(s); see errors.", len(errs)), Errors: errs}
}
