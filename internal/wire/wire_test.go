package wire_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/foodsafe/foodsafe/internal/wire"
)

var timestampPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)

// FuzzParseMillis holds ParseMillis to its rule: the wire pattern, and
// within int64.
func FuzzParseMillis(f *testing.F) {
	for _, s := range []string{"0", "1", "01", "-1", "+1", "9223372036854775807", "9223372036854775808", "1e3", " 1", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := wire.ParseMillis(s)
		n, perr := strconv.ParseInt(s, 10, 64)
		want := timestampPattern.MatchString(s) && perr == nil
		if (err == nil) != want {
			t.Fatalf("ParseMillis(%q) error %v, want accepted=%v", s, err, want)
		}
		if err == nil && int64(got) != n {
			t.Fatalf("ParseMillis(%q) = %d, want %d", s, got, n)
		}
	})
}
