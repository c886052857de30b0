package wire

import (
	"bytes"
	"fmt"
	"testing"
)

// writes records every Write, to see the pieces an answer goes out in.
type writes struct {
	all    bytes.Buffer
	pieces []int
}

func (w *writes) Write(b []byte) (int, error) {
	w.pieces = append(w.pieces, len(b))
	return w.all.Write(b)
}

// A restaurant list is written as PureJSON writes it, byte for byte, in
// pieces of about restaurantListChunk however long the list: a key of
// 20,000 restaurants x 25 scopes (11 MB) never holds more than a piece.
func TestRestaurantListWriteJSON(t *testing.T) {
	scopes := []string{"areas:read", "cleaning-task-pictures:read", "cooling:read", "deliveries:read", "users:read"}
	for _, n := range []int{0, 1, 2, 20_000} {
		l := RestaurantList{Data: make([]RestaurantGrant, n)}
		for i := range l.Data {
			l.Data[i] = RestaurantGrant{RestaurantID: fmt.Sprintf("r%05d", i), Scopes: scopes}
		}
		var w writes
		if _, err := l.WriteJSON(&w, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := w.all.String(), pureJSON(t, l)+"\n"; got != want {
			t.Fatalf("%d restaurants: got %.200s, want %.200s", n, got, want)
		}
		if n <= 2 && len(w.pieces) != 1 {
			t.Fatalf("%d restaurants: %d writes, not one", n, len(w.pieces))
		}
		for _, p := range w.pieces {
			if p > restaurantListChunk+1024 {
				t.Fatalf("%d restaurants: a piece of %d bytes", n, p)
			}
		}
	}
	for _, l := range []RestaurantList{{}, {Data: []RestaurantGrant{{RestaurantID: "r1"}}}} {
		var w writes
		if _, err := l.WriteJSON(&w, make([]byte, 7)); err != nil {
			t.Fatal(err)
		}
		if got, want := w.all.String(), pureJSON(t, l)+"\n"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

// FuzzRestaurantListIsEncodingJSON holds WriteJSON to PureJSON on any
// strings, invalid UTF-8 included (written with U+FFFD, as encoding/json
// writes them).
func FuzzRestaurantListIsEncodingJSON(f *testing.F) {
	for _, seed := range [][2]string{
		{"", ""}, {"r1", "areas:read"}, {"<&>", "\u2028\u2029"}, {"a\xffb", "\xed\xa0\x80"}, {"\x00\x1f\"\\", "é 😀"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, r, s string) {
		l := RestaurantList{Data: []RestaurantGrant{{RestaurantID: r, Scopes: []string{s, r}}, {RestaurantID: s, Scopes: []string{}}}}
		var w writes
		if _, err := l.WriteJSON(&w, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := w.all.String(), pureJSON(t, l)+"\n"; got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
	})
}
