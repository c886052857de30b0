package main

import "testing"

func TestParseSince(t *testing.T) {
	for in, want := range map[string]int64{
		"1970-01-01":    0,
		"2026-01-01":    1767225600000,
		"1767225600000": 1767225600000,
		"0":             0,
	} {
		got, err := parseSince(in)
		if err != nil || got != want {
			t.Errorf("parseSince(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-5", "2026-13-01"} {
		if _, err := parseSince(in); err == nil {
			t.Errorf("parseSince(%q) accepted", in)
		}
	}
}
