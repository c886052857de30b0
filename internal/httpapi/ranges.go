package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// A Range of many small or overlapping parts costs a multipart part
// header (about 150 bytes and the media type) per part: 299 one-byte
// ranges of a 600-byte file would answer 42 KB. So ranges are coalesced
// as RFC 9110 14.2 and 15.3.7.2 allow: overlapping ranges and ranges less
// than a part's overhead apart become one, in ascending order; and when
// what is left would still answer more than the file (its parts plus
// their headers), or more than maxRanges parts, the Range is ignored and
// the whole file answered (200). No answer is then larger than the file
// but for its own headers.

// maxRanges is the most parts a multipart answer has.
const maxRanges = 16

// partOverhead bounds the bytes a multipart/byteranges part adds to its
// own: the boundary line (a 60-character boundary) and the part's
// Content-Range and Content-Type headers.
func partOverhead(contentType string) int64 { return 200 + int64(len(contentType)) }

// coalesceRanges rewrites r's Range for a file of size bytes (see above).
// A Range it cannot read is left as it is, for http.ServeContent to refuse.
func coalesceRanges(r *http.Request, size int64, contentType string) {
	v := r.Header.Get("Range")
	set, ok := strings.CutPrefix(v, "bytes=")
	if v == "" || !ok || size == 0 {
		return
	}
	type span struct{ start, end int64 } // inclusive
	var spans []span
	for _, spec := range strings.Split(set, ",") {
		spec = strings.TrimSpace(spec)
		first, last, ok := strings.Cut(spec, "-")
		if !ok {
			return
		}
		var s span
		switch {
		case first == "":
			n, err := strconv.ParseInt(last, 10, 64)
			if err != nil || n <= 0 {
				return
			}
			s = span{max(0, size-n), size - 1}
		default:
			a, err := strconv.ParseInt(first, 10, 64)
			if err != nil || a < 0 {
				return
			}
			b := size - 1
			if last != "" {
				if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
					return
				}
			}
			if a >= size {
				continue // not satisfiable; ServeContent skips it too
			}
			s = span{a, min(b, size-1)}
		}
		spans = append(spans, s)
	}
	if len(spans) == 0 {
		return // ServeContent answers 416
	}
	slices.SortFunc(spans, func(x, y span) int { return cmp.Compare(x.start, y.start) })
	gap := partOverhead(contentType)
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s.start <= last.end+1+gap {
			last.end = max(last.end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	var total int64
	parts := make([]string, len(merged))
	for i, s := range merged {
		total += s.end - s.start + 1
		parts[i] = strconv.FormatInt(s.start, 10) + "-" + strconv.FormatInt(s.end, 10)
	}
	if len(merged) > 1 && (len(merged) > maxRanges || total+int64(len(merged))*gap > size) {
		r.Header.Del("Range")
		return
	}
	r.Header.Set("Range", "bytes="+strings.Join(parts, ","))
}
