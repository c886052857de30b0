package cursor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/cursor"
)

type pos struct {
	A int64  `json:"a"`
	B string `json:"b"`
}

func TestRoundTripAndBinding(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := cursor.New([]byte("0123456789abcdef0123456789abcdef"), func() time.Time { return now })
	tok, err := c.Seal("k", []string{"r1", "50"}, pos{7, "x"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var p pos
	if err := c.Open(tok, "k", []string{"r1", "50"}, &p); err != nil || p != (pos{7, "x"}) {
		t.Fatalf("round trip: %v %+v", err, p)
	}
	if err := c.Open(tok, "k", []string{"r1", "51"}, &p); !errors.Is(err, cursor.ErrMismatch) {
		t.Fatalf("other binding: %v", err)
	}
	if err := c.Open(tok, "other", []string{"r1", "50"}, &p); !errors.Is(err, cursor.ErrMismatch) {
		t.Fatalf("other kind: %v", err)
	}
	other := cursor.New([]byte("another key of thirty-two bytes!"), nil)
	if err := other.Open(tok, "k", []string{"r1", "50"}, &p); !errors.Is(err, cursor.ErrMalformed) {
		t.Fatalf("other key: %v", err)
	}
	now = now.Add(time.Hour)
	if err := c.Open(tok, "k", []string{"r1", "50"}, &p); !errors.Is(err, cursor.ErrExpired) {
		t.Fatalf("expiry: %v", err)
	}
}

// Kind reports the kind of a genuine cursor only, and a cursor without a
// ttl never expires.
func TestKindAndNoExpiry(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := cursor.New([]byte("0123456789abcdef0123456789abcdef"), func() time.Time { return now })
	tok, err := c.Seal("changes", []string{"r1", "areas"}, pos{7, ""}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Unseal(tok); err != nil || s.Kind() != "changes" || !s.Expires().IsZero() {
		t.Fatalf("kind: %+v %v", s, err)
	}
	other := cursor.New([]byte("another key of thirty-two bytes!"), nil)
	for name, bad := range map[string]string{"other key": "", "tampered": tok[:len(tok)-2] + "AA", "garbage": "not-a-cursor", "empty": ""} {
		codec := c
		if name == "other key" {
			codec, bad = other, tok
		}
		if s, err := codec.Unseal(bad); !errors.Is(err, cursor.ErrMalformed) || s.Kind() != "" {
			t.Fatalf("%s: kind %q, %v", name, s.Kind(), err)
		}
	}
	now = now.Add(100 * 365 * 24 * time.Hour)
	var p pos
	if err := c.Open(tok, "changes", []string{"r1", "areas"}, &p); err != nil || p.A != 7 {
		t.Fatalf("a century later: %v %+v", err, p)
	}
}

// FuzzOpen: no token, however made, panics or opens without the key.
func FuzzOpen(f *testing.F) {
	c := cursor.New([]byte("0123456789abcdef0123456789abcdef"), nil)
	good, _ := c.Seal("k", []string{"r"}, pos{1, "a"}, 0)
	for _, s := range []string{good, "", "AAAA", good[:len(good)-1], good + "A", "!!!!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		var p pos
		err := c.Open(tok, "k", []string{"r"}, &p)
		if err == nil && tok != good {
			// Another encoding of the same signed bytes is the only way in.
			again, _ := c.Seal("k", []string{"r"}, p, 0)
			if again != good {
				t.Fatalf("forged cursor %q opened to %+v", tok, p)
			}
		}
	})
}
