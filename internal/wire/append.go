package wire

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The two answers that carry records (a walk page, a single record) are
// written by hand instead of by encoding/json, for one reason: a record's
// data comes from PostgreSQL's jsonb, which is valid JSON by construction,
// and encoding/json re-validates and re-compacts every json.RawMessage it
// writes, which was the largest single cost of a walk page (12% of its CPU
// in appendCompact, 30% in encoding/json overall, under make bench-http).
// Everything is written as encoding/json writes it (PureJSON: no HTML
// escaping); the data's whitespace (jsonb's text form puts a space after
// ':' and ',') is dropped by a plain copy that skips it outside strings,
// which gives the bytes encoding/json's compaction gave, without the
// validation. TestAppendJSONMatchesEncodingJSON holds both writers to the
// same JSON, and TestCompactValidJSON the copy to json.Compact.

// AppendJSON appends the envelope as JSON. Data must be valid JSON (as
// read from jsonb); strings that are not valid UTF-8 are an error, and the
// caller falls back to encoding/json.
func (e Envelope) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	if b, err = jsontext.AppendQuote(b, e.ID); err != nil {
		return nil, err
	}
	b = append(b, `,"restaurantId":`...)
	if b, err = jsontext.AppendQuote(b, e.RestaurantID); err != nil {
		return nil, err
	}
	b = append(b, `,"collection":`...)
	if b, err = jsontext.AppendQuote(b, e.Collection); err != nil {
		return nil, err
	}
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		b = appendCompactValid(b, e.Data)
	}
	b = append(b, `,"deleted":`...)
	b = strconv.AppendBool(b, e.Deleted)
	b = appendMillis(append(b, `,"capturedAt":`...), int64(e.CapturedAt))
	b = appendMillis(append(b, `,"receivedAt":`...), int64(e.ReceivedAt))
	b = appendMillis(append(b, `,"sequence":`...), int64(e.Sequence))
	b = append(b, `,"mutationId":`...)
	if b, err = jsontext.AppendQuote(b, e.MutationID); err != nil {
		return nil, err
	}
	b = append(b, `,"sourceVersion":`...)
	if e.SourceVersion == nil {
		b = append(b, "null"...)
	} else if b, err = jsontext.AppendQuote(b, *e.SourceVersion); err != nil {
		return nil, err
	}
	b = append(b, `,"payloadVersion":`...)
	b = strconv.AppendInt(b, int64(e.PayloadVersion), 10)
	b = append(b, `,"stateKind":`...)
	if b, err = jsontext.AppendQuote(b, e.StateKind); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// AppendJSON appends the page as JSON (see Envelope.AppendJSON).
func (p WalkPage) AppendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"data":[`...)
	for i, e := range p.Data {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.AppendJSON(b); err != nil {
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
	return jsontext.AppendQuote(b, *s)
}

// appendMillis writes a timestamp or sequence as its digit string.
func appendMillis(b []byte, v int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, v, 10)
	return append(b, '"')
}

// appendCompactValid appends src, which must be valid JSON, without its
// insignificant whitespace. It does not validate: it only tells strings
// (copied as they are, escapes included) from the space between tokens.
func appendCompactValid(dst, src []byte) []byte {
	start := 0 // first byte of src not yet copied
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++ // the escaped byte cannot end the string
				}
			}
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}
