package mirror

import (
	"bytes"
	"strings"
	"testing"
)

// Positions are kept as numbers: any digit string within 64 bits, and
// nothing else.
func TestPosition(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1, "180": 180, "9223372036854775807": 9223372036854775807} {
		if got, err := position(in); err != nil || got != want {
			t.Errorf("position(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"9223372036854775808", "99999999999999999999", "-1", "+1", "", "1e3", " 1"} {
		if _, err := position(in); err == nil {
			t.Errorf("position(%q) accepted", in)
		}
	}
}

// The terminal table redraws in place: it moves the cursor back over the
// lines it drew before, shows the streams under way, and the summary.
func TestTTYProgressRedraws(t *testing.T) {
	var b bytes.Buffer
	p := NewTTYProgress(&b)
	p.Plan(2)
	p.Stream(StreamEvent{Restaurant: "r1", Stream: "areas", Kind: "full", Pages: 1, Records: 100, BudgetRemaining: 299, BudgetLimit: 300})
	first := b.String()
	if !strings.Contains(first, "r1 areas") || !strings.Contains(first, "budget 299/300") || !strings.Contains(first, "streams 0/2") {
		t.Fatalf("first drawing: %q", first)
	}
	b.Reset()
	p.Stream(StreamEvent{Restaurant: "r1", Stream: "areas", Kind: "full", Pages: 2, Records: 150, Done: true})
	second := b.String()
	if !strings.HasPrefix(second, "\x1b[2A") {
		t.Errorf("the redraw starts by moving up over the two lines drawn: %q", second)
	}
	if strings.Contains(second, "r1 areas") || !strings.Contains(second, "streams 1/2") {
		t.Errorf("a finished stream leaves the table: %q", second)
	}
	b.Reset()
	p.Done(Summary{Streams: 2, Records: 150})
	if !strings.Contains(b.String(), "2 streams (0 failed)") {
		t.Errorf("summary: %q", b.String())
	}
}
