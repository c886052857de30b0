package typed

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Input is a live record (or a delivery) on its way into the typed
// relations: data as served, with the envelope's fields.
type Input struct {
	ID                               string
	Data                             []byte
	Sequence, CapturedAt, ReceivedAt int64 // collections only
}

// maxMillis is the last millisecond of year 9999: later instants (the
// API allows 19 digits) have no Time value, only their Millis.
const maxMillis = 253402300799999

// Rows turns records of one restaurant into the rows of each of the
// source's relations (rels, as Of gives them), in column order. Values are Go values (string,
// int64, float64, bool, time.Time, or nil); a member that is absent,
// null, or of another type than its column (the server validates data,
// so only an older record could be) is nil.
func Rows(rels []*Relation, restaurant string, recs []Input) [][][]any {
	out := make([][][]any, len(rels))
	for _, in := range recs {
		data := newMembers(in.Data)
		for i, r := range rels {
			if r.Parent == "" {
				out[i] = append(out[i], r.row(restaurant, in, data, 0))
				continue
			}
			raw, ok := data.get(r.arrayPath)
			if !ok {
				continue
			}
			var items []json.RawMessage
			if json.Unmarshal(raw, &items) != nil {
				continue
			}
			for n, item := range items {
				out[i] = append(out[i], r.row(restaurant, in, newMembers(item), n+1))
			}
		}
	}
	return out
}

// row is one row of r: of a record, or of the ordinal-th element of one
// of its arrays (obj is then the element).
func (r *Relation) row(restaurant string, in Input, obj *members, ordinal int) []any {
	row := make([]any, len(r.Columns))
	for i, c := range r.Columns {
		switch c.src {
		case fromRestaurant:
			row[i] = restaurant
		case fromID, fromParent:
			row[i] = in.ID
		case fromOrdinal:
			row[i] = int64(ordinal)
		case fromSequence:
			row[i] = in.Sequence
		case fromCaptured:
			row[i] = millisValue(c.Kind, in.CapturedAt)
		case fromReceived:
			row[i] = millisValue(c.Kind, in.ReceivedAt)
		case fromData:
			raw, ok := obj.get(c.path)
			if ok {
				row[i] = convert(c.Kind, raw)
			}
		}
	}
	return row
}

// members reads an object's members on demand, decoding each nested
// object once.
type members struct {
	raw  json.RawMessage
	obj  map[string]json.RawMessage
	sub  map[string]*members
	done bool
}

func newMembers(raw json.RawMessage) *members { return &members{raw: raw} }

// get is the member at path (the whole value for an empty path); false
// when it is absent or a step is not an object.
func (m *members) get(path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return m.raw, len(m.raw) > 0
	}
	if !m.done {
		m.done = true
		if json.Unmarshal(m.raw, &m.obj) != nil {
			m.obj = nil
		}
	}
	v, ok := m.obj[path[0]]
	if !ok || len(path) == 1 {
		return v, ok
	}
	if m.sub == nil {
		m.sub = map[string]*members{}
	}
	s := m.sub[path[0]]
	if s == nil {
		s = newMembers(v)
		m.sub[path[0]] = s
	}
	return s.get(path[1:])
}

// convert reads a JSON value as a column of kind k (nil: null, or not of
// that type).
func convert(k Kind, raw json.RawMessage) any {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	switch k {
	case Text:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return s
	case Integer:
		return integer(raw)
	case Number:
		if !isNumber(raw) {
			return nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil { // beyond a double's range
			return nil
		}
		return f
	case Boolean:
		switch string(raw) {
		case "true":
			return true
		case "false":
			return false
		}
		return nil
	case Time, Millis:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 {
			return nil
		}
		return millisValue(k, ms)
	case JSON:
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return nil
		}
		return b.String()
	}
	return nil
}

// integer reads an integer in any number form (1, 1.0, 1E2): the schema
// says integer, a device may have written it otherwise.
func integer(raw json.RawMessage) any {
	if !isNumber(raw) {
		return nil
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return nil
	}
	return int64(f)
}

func isNumber(raw json.RawMessage) bool {
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// millisValue is epoch milliseconds as a column of kind k: the instant
// (UTC) for Time, within years 1970 to 9999, or the number itself.
func millisValue(k Kind, ms int64) any {
	if k == Millis {
		return ms
	}
	if ms < 0 || ms > maxMillis {
		return nil
	}
	return time.UnixMilli(ms).UTC()
}
