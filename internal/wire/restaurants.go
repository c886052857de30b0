package wire

import (
	"bytes"
	"encoding/json"
	"io"
)

// RestaurantList is GET /v1/restaurants (tool list_restaurants): every
// restaurant a key reaches, with its scopes.
type RestaurantList struct {
	Data []RestaurantGrant `json:"data" jsonschema:"Every item; the list is complete (it has no pages)."`
}

// restaurantListChunk is how much of the list WriteJSON holds before it
// writes: a key of 20,000 restaurants is 11 MB of JSON, sent in pieces.
const restaurantListChunk = 32 << 10

// WriteJSON writes the list to w as encoding/json writes it without HTML
// escaping, with a trailing newline (what PureJSON sends), a chunk at a
// time, so an answer of any size holds one chunk and never the whole: a
// short list is one write. buf is where the chunks are made (the caller's
// kept buffer); the one used is returned, for the caller to keep. It
// fails only when w does.
func (l RestaurantList) WriteJSON(w io.Writer, buf []byte) ([]byte, error) {
	b := append(buf[:0], `{"data":`...)
	if l.Data == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, g := range l.Data {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"restaurantId":`...)
			b = appendAnyString(b, g.RestaurantID)
			b = append(b, `,"scopes":`...)
			if g.Scopes == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '[')
				for j, s := range g.Scopes {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendAnyString(b, s)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
			if len(b) >= restaurantListChunk {
				if _, err := w.Write(b); err != nil {
					return b, err
				}
				b = b[:0]
			}
		}
		b = append(b, ']')
	}
	b = append(b, "}\n"...)
	_, err := w.Write(b)
	return b, err
}

// appendAnyString is appendString, and for a string that is not valid
// UTF-8 what encoding/json writes of it (U+FFFD for each invalid byte).
func appendAnyString(b []byte, s string) []byte {
	if out, err := appendString(b, s); err == nil {
		return out
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
