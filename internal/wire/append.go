package wire

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The two answers that carry records (a walk page, a single record) are
// written by hand instead of by encoding/json, for one reason: a record's
// data is stored as the text the client sent, validated and compacted on
// ingest (validate.RawMember), and encoding/json re-validates and
// re-compacts every json.RawMessage it writes, which was the largest single
// cost of a walk page (12% of its CPU in appendCompact, 30% in
// encoding/json overall, under make bench-http). Here data is copied as
// stored, byte for byte; everything else is written as encoding/json
// writes it (PureJSON: no HTML escaping). TestAppendJSONMatchesEncodingJSON
// holds both writers to the same JSON.

// AppendJSON appends the envelope as JSON. Data must be valid JSON (as
// stored: the json column checks it), and is copied as it is; strings that are not valid UTF-8 are an error, and the
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
		b = append(b, e.Data...)
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
