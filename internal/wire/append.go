package wire

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The two answers that carry records (a walk page, a single record) are
// written by hand instead of by encoding/json, for one reason: a record's
// data is stored as the text the client sent, validated and compacted on
// ingest (validate.DecodeKeeping), and encoding/json re-validates and
// re-compacts every json.RawMessage it writes, which was the largest single
// cost of a walk page under make bench-http (docs/performance.md, "make
// bench-http", has the measured profile). Here data is copied as
// stored, byte for byte; everything else is written as encoding/json
// writes it (PureJSON: no HTML escaping), byte for byte.
// TestAppendJSONMatchesEncodingJSON holds both writers to the same JSON,
// TestAppendJSONIsByteForByte to the same bytes.
//
// A page of deliveries is written here too: encoding/json's reflection
// over a page of deliveries was a large share of its CPU (the same page of
// docs/performance.md).

// AppendJSON appends the envelope as JSON. Data must be valid JSON (as
// stored: the json column checks it), and is copied as it is; strings that are not valid UTF-8 are an error, and the
// caller falls back to encoding/json.
func (e Envelope) AppendJSON(b []byte) ([]byte, error) { return e.appendJSON(b, nil) }

// owner is the restaurantId and collection members of the record a page
// wrote last, as written: every record of a walk page has the same two,
// so they are escaped once per page rather than once per record.
type owner struct {
	restaurantID, collection string
	members                  []byte
}

// appendJSON is AppendJSON, reusing o's members when they are this
// record's (o nil: none to reuse) and leaving this record's in o.
func (e Envelope) appendJSON(b []byte, o *owner) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	if b, err = appendString(b, e.ID); err != nil {
		return nil, err
	}
	if o != nil && o.members != nil && o.restaurantID == e.RestaurantID && o.collection == e.Collection {
		b = append(b, o.members...)
	} else {
		start := len(b)
		b = append(b, `,"restaurantId":`...)
		if b, err = appendString(b, e.RestaurantID); err != nil {
			return nil, err
		}
		b = append(b, `,"collection":`...)
		if b, err = appendString(b, e.Collection); err != nil {
			return nil, err
		}
		if o != nil {
			o.restaurantID, o.collection, o.members = e.RestaurantID, e.Collection, append(o.members[:0], b[start:]...)
		}
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	b = append(b, `,"deleted":`...)
	b = strconv.AppendBool(b, e.Deleted)
	b = appendMillis(append(b, `,"capturedAt":`...), int64(e.CapturedAt))
	b = appendMillis(append(b, `,"receivedAt":`...), int64(e.ReceivedAt))
	b = appendMillis(append(b, `,"sequence":`...), int64(e.Sequence))
	b = append(b, `,"mutationId":`...)
	if b, err = appendString(b, e.MutationID); err != nil {
		return nil, err
	}
	b = append(b, `,"sourceVersion":`...)
	if e.SourceVersion == nil {
		b = append(b, "null"...)
	} else if b, err = appendString(b, *e.SourceVersion); err != nil {
		return nil, err
	}
	b = append(b, `,"payloadVersion":`...)
	b = strconv.AppendInt(b, int64(e.PayloadVersion), 10)
	if e.StateKind == StateKind {
		return append(b, `,"stateKind":"`+StateKind+`"}`...), nil
	}
	b = append(b, `,"stateKind":`...)
	if b, err = appendString(b, e.StateKind); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// Compacted reports whether data, valid JSON, has no whitespace between
// its tokens, as ingest stores it: encoding/json then writes it, as a
// json.RawMessage, as it is. Data written while the column was jsonb
// (before migration 00013, or during its online conversion) comes back
// with a space after each ':' and ','.
func Compacted(data []byte) bool {
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inString && c == '\\':
			i++ // the escaped byte, a quote perhaps
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}

// AppendJSON appends the page as JSON (see Envelope.AppendJSON).
func (p WalkPage) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"data":[`...)
	var o owner
	for i, e := range p.Data {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.appendJSON(b, &o); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"nextCursor":`...)
	if b, err = appendNullable(b, p.NextCursor); err != nil {
		return nil, err
	}
	b = append(b, `,"changesCursor":`...)
	if b, err = appendNullable(b, p.ChangesCursor); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendNullable(b []byte, s *string) ([]byte, error) {
	if s == nil {
		return append(b, "null"...), nil
	}
	return appendString(b, *s)
}

// appendMillis writes a timestamp or sequence as its digit string.
func appendMillis(b []byte, v int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '"')
}

// errNotAppender: a page whose items do not write their own JSON; the
// caller falls back to encoding/json.
var errNotAppender = errors.New("the page's items do not append their own JSON")

// AppendJSON appends the page as JSON when its items append their own
// (a delivery does), and fails otherwise (see Envelope.AppendJSON).
func (p Page[T]) AppendJSON(b []byte) ([]byte, error) {
	var err error
	if p.Data == nil {
		b = append(b, `{"data":null`...)
	} else {
		b = append(b, `{"data":[`...)
		for i := range p.Data {
			if i > 0 {
				b = append(b, ',')
			}
			// A pointer: boxing the item itself would copy it to the heap.
			ap, ok := any(&p.Data[i]).(interface{ AppendJSON([]byte) ([]byte, error) })
			if !ok {
				return nil, errNotAppender
			}
			if b, err = ap.AppendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"nextCursor":`...)
	if b, err = appendNullable(b, p.NextCursor); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// AppendJSON appends the delivery as JSON (see Envelope.AppendJSON); a
// temperature value that is not a JSON number is an error, as it is to
// encoding/json.
func (d *Delivery) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	if b, err = appendString(b, d.ID); err != nil {
		return nil, err
	}
	b = append(b, `,"restaurantId":`...)
	if b, err = appendString(b, d.RestaurantID); err != nil {
		return nil, err
	}
	b = appendMillis(append(b, `,"occurredAt":`...), int64(d.OccurredAt))
	b = append(b, `,"isCompliant":`...)
	b = strconv.AppendBool(b, d.IsCompliant)
	b = append(b, `,"supplier":{"id":`...)
	if b, err = appendString(b, d.Supplier.ID); err != nil {
		return nil, err
	}
	b = append(b, `,"name":`...)
	if b, err = appendString(b, d.Supplier.Name); err != nil {
		return nil, err
	}
	b = append(b, `},"temperatureRecords":`...)
	if d.TemperatureRecords == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range d.TemperatureRecords {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = t.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"nonComplianceReasons":`...)
	if b, err = appendStrings(b, d.NonComplianceReasons); err != nil {
		return nil, err
	}
	b = append(b, `,"correctiveActions":`...)
	if b, err = appendStrings(b, d.CorrectiveActions); err != nil {
		return nil, err
	}
	b = append(b, `,"commentary":`...)
	if b, err = appendNullable(b, d.Commentary); err != nil {
		return nil, err
	}
	b = append(b, `,"imageCount":`...)
	b = strconv.AppendInt(b, d.ImageCount, 10)
	b = appendMillis(append(b, `,"receivedAt":`...), int64(d.ReceivedAt))
	return append(b, '}'), nil
}

func (t TemperatureRecord) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"product":`...)
	if b, err = appendString(b, t.Product); err != nil {
		return nil, err
	}
	b = append(b, `,"lotNumber":`...)
	if b, err = appendString(b, t.LotNumber); err != nil {
		return nil, err
	}
	b = append(b, `,"unit":`...)
	if b, err = appendString(b, t.Unit); err != nil {
		return nil, err
	}
	b = append(b, `,"value":`...)
	switch {
	case t.Value == "": // encoding/json writes an empty Number as 0
		b = append(b, '0')
	case isNumber(string(t.Value)):
		b = append(b, t.Value...)
	default:
		return nil, fmt.Errorf("invalid number literal %q", t.Value)
	}
	return append(b, '}'), nil
}

func appendStrings(b []byte, ss []string) ([]byte, error) {
	if ss == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendString(b, s); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// isNumber reports whether s is a JSON number (RFC 8259), the check
// encoding/json makes before writing a json.Number: an optional minus, an
// integer part, then an optional fraction and exponent, and nothing else.
func isNumber(s string) bool {
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	s, ok := cutInteger(s)
	if !ok {
		return false
	}
	s, ok = cutExponent(cutFraction(s))
	return ok && s == ""
}

// cutInteger removes a number's integer part from the front of s: 0, or
// digits not starting with 0. ok is false when s does not start with one.
func cutInteger(s string) (rest string, ok bool) {
	switch {
	case s == "":
		return s, false
	case s[0] == '0':
		return s[1:], true
	case '1' <= s[0] && s[0] <= '9':
		return cutDigits(s[1:]), true
	}
	return s, false
}

// cutFraction removes a fraction (a dot and at least one digit) from the
// front of s, if it starts with one.
func cutFraction(s string) string {
	if len(s) >= 2 && s[0] == '.' && isDigit(s[1]) {
		return cutDigits(s[2:])
	}
	return s
}

// cutExponent removes an exponent (e or E, an optional sign, digits) from
// the front of s, if it starts with one; ok is false for a sign with
// nothing after it. An exponent without digits is left to fail the
// caller's end-of-number check, as in encoding/json.
func cutExponent(s string) (rest string, ok bool) {
	if len(s) < 2 || (s[0] != 'e' && s[0] != 'E') {
		return s, true
	}
	s = s[1:]
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
		if s == "" {
			return s, false
		}
	}
	return cutDigits(s), true
}

// cutDigits removes the decimal digits from the front of s.
func cutDigits(s string) string {
	for len(s) > 0 && isDigit(s[0]) {
		s = s[1:]
	}
	return s
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// errInvalidUTF8: a string encoding/json would write with U+FFFD in place
// of its invalid bytes; the caller lets encoding/json write it.
var errInvalidUTF8 = errors.New("a string is not valid UTF-8")

const hexDigits = "0123456789abcdef"

// appendString writes s quoted as encoding/json does without HTML
// escaping, byte for byte: the short escapes \b \f \n \r \t, \u00xx for
// other control characters, and U+2028 and U+2029 escaped (JavaScript
// reads them as line ends). Invalid UTF-8 is errInvalidUTF8.
func appendString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return nil, errInvalidUTF8
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}
