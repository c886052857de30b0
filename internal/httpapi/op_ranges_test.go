package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCoalesceRanges(t *testing.T) {
	t.Parallel()
	var many []string
	for i := 0; i < 598; i += 2 {
		many = append(many, strconv.Itoa(i)+"-"+strconv.Itoa(i))
	}
	for _, tc := range []struct {
		size       int64
		in, want   string // want "" : the Range is dropped (the whole file)
		whyNothing string
	}{
		{600, "bytes=" + strings.Join(many, ","), "bytes=0-596", "299 one-byte ranges are one"},
		{600, "bytes=0-599,0-599,0-599", "bytes=0-599", ""},
		{100000, "bytes=0-9,10-19", "bytes=0-19", ""},
		{100000, "bytes=0-9,100-109", "bytes=0-109", ""},
		{100000, "bytes=50000-50009,0-9", "bytes=0-9,50000-50009", ""},
		{100000, "bytes=-10,0-9", "bytes=0-9,99990-99999", ""},
		{100000, "bytes=99990-", "bytes=99990-99999", ""},
		{100000, "bytes=0-9,200000-", "bytes=0-9", ""},
		{400, "bytes=0-9,300-309", "", "two parts and their headers are more than the file"},
		{1000, "bytes=0-9,900-909", "bytes=0-9,900-909", ""},
		{600, "bytes=0-0,300-300,599-599", "", "three parts and their headers are more than the file"},
		{1 << 20, "bytes=" + rangesEvery(17, 10000), "", "more than 16 parts"},
		{1 << 20, "bytes=" + rangesEvery(16, 10000), "bytes=" + rangesEvery(16, 10000), ""},
		{600, "bytes=abc", "bytes=abc", ""},
		{600, "bytes=5-1", "bytes=5-1", ""},
		{600, "bytes=700-800", "bytes=700-800", ""},
	} {
		r, err := http.NewRequest(http.MethodGet, "/", nil)
		require.NoError(t, err)
		r.Header.Set("Range", tc.in)
		coalesceRanges(r, tc.size, "application/pdf")
		require.Equal(t, tc.want, r.Header.Get("Range"), "%.80s of %d bytes %s", tc.in, tc.size, tc.whyNothing)
	}
}

// rangesEvery is n ten-byte ranges, step bytes apart.
func rangesEvery(n int, step int64) string {
	var out []string
	for i := range int64(n) {
		out = append(out, strconv.FormatInt(i*step, 10)+"-"+strconv.FormatInt(i*step+9, 10))
	}
	return strings.Join(out, ",")
}
