package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// clockOrVolatile matches calls whose value Citus cannot evaluate once on
// the coordinator when they sit inside a conditional expression.
var clockOrVolatile = regexp.MustCompile(`(?i)\b(now|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|random|gen_random_uuid|nextval)\s*\(|\b(current_timestamp|current_date|current_time|localtimestamp|localtime)\b`)

// No query calls a non-immutable function inside COALESCE or CASE: Citus
// refuses to plan such a statement ("non-IMMUTABLE functions are not
// allowed in CASE or COALESCE statements"), so a query written that way
// works on plain PostgreSQL and fails on a distributed deployment. Pass
// the time as a parameter instead.
func TestQueriesCallNoClockInConditionals(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "sql", "queries", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no query files: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, span := range conditionalSpans(stripComments(string(raw))) {
			if m := clockOrVolatile.FindString(span); m != "" {
				t.Errorf("%s: %q inside %q", filepath.Base(f), m, span)
			}
		}
	}
}

// The checker finds what it must, so the test above can fail.
func TestConditionalSpans(t *testing.T) {
	for _, bad := range []string{
		"UPDATE k SET r = COALESCE(r, now()) WHERE id = $1",
		"SELECT CASE WHEN a THEN current_timestamp ELSE b END FROM t",
		"SELECT coalesce(a, (SELECT max(x) FROM y WHERE z < clock_timestamp()))",
		"SELECT CASE WHEN a THEN CASE WHEN b THEN 1 END ELSE random() END",
	} {
		found := false
		for _, span := range conditionalSpans(bad) {
			found = found || clockOrVolatile.MatchString(span)
		}
		if !found {
			t.Errorf("not caught: %s", bad)
		}
	}
	for _, good := range []string{
		"UPDATE k SET r = COALESCE(r, $2::timestamptz), seen = now() WHERE id = $1",
		"SELECT CASE WHEN a THEN 1 END, now() FROM t",
		"SELECT nowhere FROM t WHERE coalesce(a, b) = 1",
	} {
		for _, span := range conditionalSpans(good) {
			if clockOrVolatile.MatchString(span) {
				t.Errorf("false alarm in %q: %q", good, span)
			}
		}
	}
}

// stripComments removes -- comments (the query files' prose mentions
// functions it must not be mistaken to call).
func stripComments(sql string) string {
	lines := strings.Split(sql, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "--"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}

var (
	coalesceOpen = regexp.MustCompile(`(?i)\bcoalesce\s*\(`)
	caseWord     = regexp.MustCompile(`(?i)\b(case|end)\b`)
)

// conditionalSpans returns the text of every COALESCE(...) and every
// CASE ... END of sql, nested ones included.
func conditionalSpans(sql string) []string {
	var spans []string
	for _, loc := range coalesceOpen.FindAllStringIndex(sql, -1) {
		depth, end := 0, len(sql)
		for i := loc[1] - 1; i < len(sql); i++ {
			switch sql[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 {
				end = i + 1
				break
			}
		}
		spans = append(spans, sql[loc[0]:end])
	}
	var open []int
	for _, loc := range caseWord.FindAllStringIndex(sql, -1) {
		if strings.EqualFold(sql[loc[0]:loc[1]], "case") {
			open = append(open, loc[0])
			continue
		}
		if len(open) > 0 {
			spans = append(spans, sql[open[len(open)-1]:loc[1]])
			open = open[:len(open)-1]
		}
	}
	return spans
}
