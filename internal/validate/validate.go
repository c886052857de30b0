// Package validate compiles the embedded JSON Schemas once and validates
// request bodies against them, reporting every violation with an RFC 6901
// pointer. Validation uses github.com/santhosh-tekuri/jsonschema/v6
// (maintained, draft 2020-12).
package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/schemas"
)

// maxNumberLen bounds the text of a JSON number: the cap of a string in
// data (spec 5), so a number costs no more to hold than a string does.
const maxNumberLen = 10000

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
// The body must be one JSON object (RFC 8259): UTF-8 throughout (invalid
// bytes and lone surrogate escapes such as \ud800 are refused, never
// rewritten), member names unique within an object, no NUL character, and
// every number a finite double of at most 10,000 characters. Numbers keep
// the text they were sent with (json.Number) for the validator; what is
// stored is the body's own text (DecodeKeeping). Replays are compared on
// wire.RequestDigest, where 1.50 and 1.5 are the same value.
// Every violation is reported with the JSON Pointer of the offending value.
// A body beyond the bounds of every schema (Bounds) is refused before any
// value is built.
func Decode(body []byte) (map[string]any, error) {
	doc, _, err := DecodeKeeping(body, "")
	return doc, err
}

// DecodeKeeping is Decode that also returns the text of the body's
// top-level member keep as sent but for the whitespace between its tokens
// (jsontext's Compact: strings and numbers are never rewritten, members
// keep their order); nil when the body has no such member. Ingest stores a
// record's data this way, so that it reads back as the client wrote it.
//
// A body is read once: the strict reader builds the document, checks each
// number and notes where keep lies, in one pass. Only a body it refuses is
// read again, by refusal, to say what is wrong with it.
func DecodeKeeping(body []byte, keep string) (map[string]any, json.RawMessage, error) {
	if err := Bounds(body); err != nil {
		return nil, nil, err
	}
	if doc, raw, ok := readStrict(body, keep); ok {
		var errs []apperr.FieldError
		checkStorable(doc, "", &errs)
		if len(errs) == 0 {
			return doc, raw, nil
		}
	}
	doc, err := refusal(body)
	if err != nil {
		return nil, nil, err
	}
	// Not reached for a body readStrict refuses (refusal accepts what
	// readStrict accepts, and no more); kept so that it could never
	// accept a body without its member.
	raw, err := rawMember(body, keep)
	return doc, raw, err
}

// refusal reads a body readStrict refused as Decode always has: first
// encoding/json under the validator (its message for text that is not
// JSON), then the strict reader for what encoding/json lets through
// (invalid UTF-8, duplicate names, numbers out of range), then NUL
// characters; every violation with its pointer, sorted.
func refusal(body []byte) (map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return nil, apperr.New(apperr.Invalid, "The body is not valid JSON: %s.", jsonErrorText(err))
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, apperr.New(apperr.Invalid, "The body must be a JSON object.")
	}
	// encoding/json, under the validator, accepts invalid UTF-8 and
	// duplicate names silently; the strict reader finds them with their
	// location, and checks every number on the way.
	errs := strictScan(body)
	checkStorable(obj, "", &errs)
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Pointer < errs[j].Pointer })
		return nil, Invalid(errs)
	}
	return obj, nil
}

// readStrict reads body, one JSON object, with the strict reader into the
// form encoding/json with UseNumber gives (maps, slices, strings, bools,
// nil, json.Number), and returns the compacted text of its top-level
// member keep (nil when absent or keep is ""). ok is false for anything
// Decode refuses but NUL characters (checkStorable): text that is not one
// JSON value, invalid UTF-8, a duplicate name, a number out of range,
// another value than an object.
func readStrict(body []byte, keep string) (doc map[string]any, raw json.RawMessage, ok bool) {
	r := strictReader{d: jsontext.NewDecoder(bytes.NewReader(body)), body: body, keep: keep}
	tok, err := r.d.ReadToken()
	if err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	v, ok := r.object(true)
	if !ok {
		return nil, nil, false
	}
	if _, err := r.d.ReadToken(); err != io.EOF {
		return nil, nil, false // a second value, or bytes that are none
	}
	if r.raw != nil {
		raw = json.RawMessage(r.raw)
	}
	return v, raw, true
}

// strictReader is readStrict's state.
type strictReader struct {
	d    *jsontext.Decoder
	body []byte
	keep string
	raw  jsontext.Value // keep's text, once read
}

// object reads an object's members after its '{', and its '}'; top is
// whether it is the body itself.
func (r *strictReader) object(top bool) (map[string]any, bool) {
	obj := map[string]any{}
	for r.d.PeekKind() == '"' {
		name, err := r.d.ReadToken()
		if err != nil {
			return nil, false
		}
		k := name.String()
		start := r.d.InputOffset()
		v, ok := r.value()
		if !ok {
			return nil, false
		}
		if top && r.keep != "" && k == r.keep {
			// What follows the name: blanks, the colon, blanks, the value.
			r.raw = jsontext.Value(bytes.TrimLeft(r.body[start:r.d.InputOffset()], " \t\r\n:")).Clone()
			if err := r.raw.Compact(); err != nil {
				return nil, false
			}
		}
		obj[k] = v
	}
	tok, err := r.d.ReadToken()
	return obj, err == nil && tok.Kind() == '}'
}

// value reads one value.
func (r *strictReader) value() (any, bool) {
	tok, err := r.d.ReadToken()
	if err != nil {
		return nil, false
	}
	switch tok.Kind() {
	case '{':
		return r.object(false)
	case '[':
		arr := []any{}
		for r.d.PeekKind() != ']' {
			v, ok := r.value()
			if !ok {
				return nil, false
			}
			arr = append(arr, v)
		}
		_, err := r.d.ReadToken()
		return arr, err == nil
	case '"':
		return tok.String(), true
	case '0':
		s := tok.String()
		return json.Number(s), numberViolation(s) == ""
	case 't', 'f':
		return tok.Bool(), true
	case 'n':
		return nil, true
	}
	return nil, false
}

// strictScan reads the body token by token with the strict reader of
// github.com/go-json-experiment/json (the upstream of encoding/json/v2),
// which refuses invalid UTF-8, invalid surrogate escapes and duplicate
// member names and says where. It also checks each number's range.
func strictScan(body []byte) []apperr.FieldError {
	var errs []apperr.FieldError
	d := jsontext.NewDecoder(bytes.NewBuffer(body))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, syntaxViolation(err))
			}
			return errs
		}
		if tok.Kind() == '0' {
			if detail := numberViolation(tok.String()); detail != "" {
				errs = append(errs, apperr.FieldError{Pointer: string(d.StackPointer()), Detail: detail})
			}
		}
	}
}

// syntaxViolation locates what the strict reader refused.
func syntaxViolation(err error) apperr.FieldError {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return apperr.FieldError{Detail: "the body is not valid JSON text"}
	}
	at := string(se.JSONPointer)
	msg := se.Err.Error()
	switch {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		return apperr.FieldError{Pointer: at, Detail: "member name appears twice in the same object; names must be unique"}
	case strings.Contains(msg, "UTF-8"), strings.Contains(msg, "surrogate"):
		return apperr.FieldError{Pointer: at, Detail: "text is not valid UTF-8 (invalid bytes or a lone surrogate escape); JSON must be UTF-8 (RFC 8259)"}
	}
	return apperr.FieldError{Pointer: at, Detail: "not valid JSON text: " + jsonErrorText(se.Err)}
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

// checkStorable walks a decoded body and refuses strings or member names
// holding NUL, which PostgreSQL cannot store.
func checkStorable(v any, ptr string, errs *[]apperr.FieldError) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			at := ptr + "/" + escape(k)
			if strings.ContainsRune(k, 0) {
				*errs = append(*errs, apperr.FieldError{Pointer: at, Detail: "member name " + nulDetail})
				continue
			}
			checkStorable(c, at, errs)
		}
	case []any:
		for i, c := range t {
			checkStorable(c, ptr+"/"+strconv.Itoa(i), errs)
		}
	case string:
		if strings.ContainsRune(t, 0) {
			*errs = append(*errs, apperr.FieldError{Pointer: ptr, Detail: nulDetail})
		}
	}
}

// numberViolation says why a JSON number is refused, or "". A number's
// value must be within the range of an IEEE-754 double (what a JSON number
// means to clients: the OpenAPI document says format double), and its text
// at most 10,000 characters, like a string's; within that, any text JSON
// allows (-0.0, 1E+2, 300 significant digits) is stored and served as sent.
func numberViolation(s string) string {
	if len(s) > maxNumberLen {
		return "number too long: a number is written in at most 10000 characters"
	}
	if !usableNumber(s) {
		return "number out of range: a number's value must be within the range of an IEEE-754 double (finite, and not a non-zero value that rounds to zero)"
	}
	return ""
}

// usableNumber rejects overflow to infinity and non-zero values that
// underflow to zero.
func usableNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	if f == 0 {
		mant := s
		if i := strings.IndexAny(mant, "eE"); i >= 0 {
			mant = mant[:i]
		}
		return strings.Trim(mant, "-+0.") == ""
	}
	return true
}

// Validate checks doc against the named schema and returns every violation,
// pointers prefixed with prefix (e.g. "/data"), sorted by pointer.
func (s *Set) Validate(name string, doc any, prefix string) []apperr.FieldError {
	sch, ok := s.compiled[name]
	if !ok {
		panic("schema: unknown schema " + name)
	}
	var out []apperr.FieldError
	if err := sch.Validate(doc); err != nil {
		ve, ok := err.(*jsonschema.ValidationError)
		if !ok {
			return []apperr.FieldError{{Pointer: prefix, Detail: err.Error()}}
		}
		collect(ve, prefix, &out)
	}
	if rule := rules[name]; rule != nil {
		out = append(out, rule(doc, prefix)...)
	}
	if len(out) == 0 {
		return nil
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return dedupe(out)
}

// rules beyond what a JSON Schema pattern can say, or can say in a form
// every engine compiles (RE2 has no look-ahead; Python's re and most
// validators have no \p{...} classes), by schema name. Each reads the
// document as it may be, valid or not, and runs beside the schema, so a
// body hears of every violation at once.
var rules = map[string]func(doc any, prefix string) []apperr.FieldError{
	"temperature-records.data":         upperCaseShift,
	"cooking-temperature-records.data": upperCaseShift,
	"drive-files.data": func(doc any, prefix string) []apperr.FieldError {
		m, _ := doc.(map[string]any)
		if k, ok := m["s3Key"].(string); ok && hostLike(k) {
			return []apperr.FieldError{{Pointer: prefix + "/s3Key",
				Detail: "must not start with a host: a key is not fetchable (no scheme, host or leading slash)"}}
		}
		return nil
	},
}

// upperCaseShift refuses a shift holding a lower-case letter of any
// script (Unicode category Ll). The schema's pattern, ^[^a-z]*$, says it
// for a to z only: \P{Ll}, which said all of it, is refused by Python's
// re and by the OpenAPI validators built on it.
func upperCaseShift(doc any, prefix string) []apperr.FieldError {
	m, _ := doc.(map[string]any)
	s, ok := m["shift"].(string)
	if !ok || !strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Ll, r) }) {
		return nil
	}
	return []apperr.FieldError{{Pointer: prefix + "/shift", Detail: shiftDetail}}
}

// shiftDetail is what the schema's pattern and upperCaseShift both say.
const (
	shiftDetail      = "must be in upper case: no lower-case letter"
	upperCasePattern = "^[^a-z]*$"
)

var (
	ipv4Like = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){3}$`)
	dnsLike  = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}\.?$`)
)

// hostLike reports a key whose first segment, followed by a slash, reads
// as a host: localhost, an IPv4 address, host:port, or a dotted name whose
// last label is letters (example.com/). A bare file name (plan.pdf) has no
// slash after it and is fine; a first folder named like a domain is the
// price of the rule.
func hostLike(key string) bool {
	first, _, ok := strings.Cut(key, "/")
	if !ok || first == "" {
		return false
	}
	if h, port, hasPort := strings.Cut(first, ":"); hasPort && h != "" {
		if _, err := strconv.Atoi(port); err == nil {
			return true
		}
	}
	return strings.EqualFold(first, "localhost") || ipv4Like.MatchString(first) || dnsLike.MatchString(first)
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
	case *kind.Pattern:
		detail := e.ErrorKind.LocalizedString(printer)
		if k.Want == upperCasePattern {
			// upperCaseShift says the same, and more (any script):
			// one violation, one detail.
			detail = shiftDetail
		}
		*out = append(*out, apperr.FieldError{Pointer: at, Detail: detail})
	case *kind.Not:
		// The library says only "'not' failed". The one "not" of the
		// request schemas is sourceVersion's: a string or null that is
		// not a string, i.e. null.
		*out = append(*out, apperr.FieldError{Pointer: at, Detail: "only null is accepted here"})
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

// rawMember is DecodeKeeping's member, read from a body refusal accepted.
func rawMember(body []byte, name string) (json.RawMessage, error) {
	if name == "" {
		return nil, nil
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(body))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errors.New("validate: the body is not a JSON object")
	}
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		if tok.String() != name {
			if err := d.SkipValue(); err != nil {
				return nil, err
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		v = v.Clone()
		if err := v.Compact(); err != nil {
			return nil, err
		}
		return json.RawMessage(v), nil
	}
	return nil, nil
}
