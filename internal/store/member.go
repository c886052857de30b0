package store

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/go-json-experiment/json/jsontext"
)

// withMember returns the JSON object obj with the value of member name
// replaced by v (appended when obj has no such member). Every other member
// is copied as it was, in its place: the service rewrites only what it
// owns (data.asset) and leaves the rest of a record's data as the client
// sent it, numbers' text and members' order included.
func withMember(obj json.RawMessage, name string, v json.RawMessage) (json.RawMessage, error) {
	d := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, errors.New("store: data is not a JSON object")
	}
	out := append(make([]byte, 0, len(obj)+len(v)+len(name)+4), '{')
	replaced := false
	for d.PeekKind() == '"' {
		rawName, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, rawName...), ':')
		unquoted, err := jsontext.AppendUnquote(nil, rawName)
		if err != nil {
			return nil, err
		}
		value, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		if string(unquoted) == name {
			out, replaced = append(out, v...), true
		} else {
			out = append(out, value...)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	if !replaced {
		if len(out) > 1 {
			out = append(out, ',')
		}
		var err error
		if out, err = jsontext.AppendQuote(out, name); err != nil {
			return nil, err
		}
		out = append(append(out, ':'), v...)
	}
	return append(out, '}'), nil
}
