package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"
)

// Decimal is the exact value of a JSON number: digits × 10^exp, with the
// digits stripped of leading and trailing zeros (empty for zero). JSON
// numbers are decimal text and the service carries them through as sent
// (data is stored as the text sent); Decimal is how two texts of one
// value (1.50, 1.5, 15e-1) are recognised as the same.
type Decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExponent bounds exponents far past any double, so arithmetic on them
// cannot overflow.
const maxExponent = 1 << 40

// ParseDecimal reads a JSON number (RFC 8259 grammar). ok is false for
// anything else, and for exponents beyond any storable value.
func ParseDecimal(s string) (d Decimal, ok bool) {
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, hasFrac := strings.Cut(mant, ".")
	if !allDigits(intPart) || (len(intPart) > 1 && intPart[0] == '0') || (hasFrac && !allDigits(frac)) {
		return Decimal{}, false
	}
	var e int64
	if hasExp {
		t := strings.TrimPrefix(strings.TrimPrefix(expText, "+"), "-")
		if !allDigits(t) {
			return Decimal{}, false
		}
		v, err := strconv.ParseInt(expText, 10, 64)
		if err != nil || v > maxExponent || v < -maxExponent {
			return Decimal{}, false
		}
		e = v
	}
	all := strings.TrimLeft(intPart+frac, "0")
	if all == "" { // zero, whatever its sign and exponent
		return Decimal{}, true
	}
	trail := len(all) - len(strings.TrimRight(all, "0"))
	d.digits = all[:len(all)-trail]
	d.exp = e - int64(len(frac)) + int64(trail)
	return d, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Canonical is the value's one text: "0", or the significant digits and
// exponent ("15e-1" for 1.50, "-1e2" for -100). It is valid JSON.
func (d Decimal) Canonical() string {
	if d.digits == "" {
		return "0"
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	return sign + d.digits + "e" + strconv.FormatInt(d.exp, 10)
}

// Integer is the value's plain integer text ("100" for 1E2, 1.00e2 and
// 100.0; "0" for -0.0 and 0E0), or ok false when the value has a
// fractional part. It is the form an integer field of the schemas takes
// on the wire, whatever form a device sent: a typed client decodes it
// into an integer, where 1.0 fails (Go's encoding/json, oapi-codegen,
// serde, Jackson). The text is at most len(digits) + exp characters, so
// callers pass only values already bounded (every number the service
// accepts is a finite double: at most 309 digits).
func (d Decimal) Integer() (text string, ok bool) {
	if d.digits == "" {
		return "0", true
	}
	if d.exp < 0 {
		return "", false
	}
	sign := ""
	if d.neg {
		sign = "-"
	}
	return sign + d.digits + strings.Repeat("0", int(d.exp)), true
}

// CanonicalJSON re-encodes a JSON document so that equal values have equal
// bytes: object members sorted by name, numbers in Decimal.Canonical form,
// no insignificant whitespace. Digests of requests (to tell a replay from a
// conflicting reuse of an id) are taken over it.
func CanonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(canonicalNumbers(v))
}

// RequestDigest is the one rule by which every ingest (a record's change,
// a delivery) tells a replay from a conflicting reuse of its id: the
// SHA-256 of the request's value in canonical JSON (CanonicalJSON), so
// that 3.50 and 3.5 are the same request. v is either a document as a
// json.Decoder with UseNumber decodes it (its numbers are rewritten in
// place, CanonicalDocument) or a typed value, encoded by encoding/json
// first. The digests are stored (records' request_sha256, deliveries'
// content_sha256): the rule cannot change without a migration of them.
func RequestDigest(v any) ([]byte, error) {
	var canon []byte
	var err error
	if doc, ok := v.(map[string]any); ok {
		canon, err = CanonicalDocument(doc)
	} else {
		var plain []byte
		if plain, err = json.Marshal(v); err == nil {
			canon, err = CanonicalJSON(plain)
		}
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	return sum[:], nil
}

// CanonicalDocument is CanonicalJSON of a document already decoded as a
// json.Decoder with UseNumber decodes it (maps, slices, strings, bools,
// nil and json.Number), without encoding and decoding it once more first:
// the same bytes, at a third of the cost. Its numbers are replaced in
// place.
func CanonicalDocument(doc map[string]any) ([]byte, error) {
	return json.Marshal(canonicalNumbers(doc))
}

func canonicalNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = canonicalNumbers(c)
		}
	case []any:
		for i, c := range t {
			t[i] = canonicalNumbers(c)
		}
	case json.Number:
		if d, ok := ParseDecimal(string(t)); ok {
			return json.Number(d.Canonical())
		}
	}
	return v
}
