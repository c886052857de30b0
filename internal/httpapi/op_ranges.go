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
	spans, ok := parseRanges(set, size)
	if !ok || len(spans) == 0 {
		return // unreadable, or none satisfiable: left for ServeContent to refuse (416)
	}
	gap := partOverhead(contentType)
	merged := mergeSpans(spans, gap)
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

// byteSpan is a range of a file's bytes, both ends included.
type byteSpan struct{ start, end int64 }

// parseRanges reads a Range's comma-separated specs for a file of size
// bytes, leaving out those that start past its end (ServeContent skips
// them too); ok is false when a spec cannot be read.
func parseRanges(set string, size int64) (spans []byteSpan, ok bool) {
	for _, spec := range strings.Split(set, ",") {
		s, satisfiable, ok := parseRangeSpec(strings.TrimSpace(spec), size)
		if !ok {
			return nil, false
		}
		if satisfiable {
			spans = append(spans, s)
		}
	}
	return spans, true
}

// parseRangeSpec reads one spec: "first-last", "first-" or "-suffix".
func parseRangeSpec(spec string, size int64) (s byteSpan, satisfiable, ok bool) {
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return s, false, false
	}
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n <= 0 {
			return s, false, false
		}
		return byteSpan{max(0, size-n), size - 1}, true, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return s, false, false
	}
	b := size - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return s, false, false
		}
	}
	if a >= size {
		return s, false, true
	}
	return byteSpan{a, min(b, size-1)}, true, true
}

// mergeSpans sorts spans by start and merges those that overlap or are
// less than gap bytes apart.
func mergeSpans(spans []byteSpan, gap int64) []byteSpan {
	slices.SortFunc(spans, func(x, y byteSpan) int { return cmp.Compare(x.start, y.start) })
	merged := spans[:1]
	for _, s := range spans[1:] {
		if last := &merged[len(merged)-1]; s.start <= last.end+1+gap {
			last.end = max(last.end, s.end)
			continue
		}
		merged = append(merged, s)
	}
	return merged
}
