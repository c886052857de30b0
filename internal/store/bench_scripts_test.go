package store_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// The benchmark scripts run the statements of sql/queries under pgbench,
// whose variables (:x, from sqlc.arg(x)) they set by name with -D; a
// statement that gains or renames a parameter leaves the script setting
// the old ones, and pgbench then measures a failing statement, or the
// script another page than the service's (as once with max_bytes). Each
// row of make bench-http and each pgbench of make compare-walk is held
// here to the parameters of the statements it runs: the -D names are
// exactly those, and the statements sqlc generates number as many.
func TestBenchScriptsSetTheStatementsParameters(t *testing.T) {
	params := queryParams(t)
	// The generated statements take as many parameters as sql/queries
	// names (sqlc numbers one per name), so the names are what they bind.
	for name, sql := range map[string]string{"RecordWalkFirstPage": db.RecordWalkFirstPage, "RecordWalkPage": db.RecordWalkPage,
		"RecordGet": db.RecordGet, "DeliveryListFirst": db.DeliveryListFirst, "AssetListForRecord": db.AssetListForRecord} {
		require.Len(t, params[name], placeholders(sql), "%s: parameters named in sql/queries and numbered by sqlc", name)
	}
	// BENCH_WIDEST appends a walk's summed statement to its scripts (widen),
	// under the same -D variables: it must take the same parameters, and
	// the service passes them in the same order (pgrows.walkRowsInto).
	for plain, summed := range map[string]string{"RecordWalkFirstPage": db.RecordWalkFirstPageSummed, "RecordWalkPage": db.RecordWalkPageSummed} {
		require.Equal(t, params[plain], params[plain+"Summed"], "%sSummed: %s's parameters, in its order", plain, plain)
		require.Len(t, params[plain+"Summed"], placeholders(summed), "%sSummed: parameters named and numbered", plain)
	}

	t.Run("bench-http", func(t *testing.T) {
		lines := shellLines(t, "bench-http.sh")
		scripts := map[string][]string{} // script file: its statements
		rows := 0
		for _, words := range lines {
			for k := 0; k+1 < len(words); k++ {
				// script FILE NAME... (several may share a line, split by ;)
				if words[k] == "script" {
					end := k + 2
					for end < len(words) && words[end] != ";" {
						end++
					}
					scripts[words[k+1]] = words[k+2 : end]
				}
			}
			// row LABEL PATH DATA-SCRIPT KEY+DATA-SCRIPT -D x=v...
			if len(words) < 5 || words[0] != "row" || words[3] == "" {
				continue
			}
			statements, ok := scripts[words[3]]
			require.True(t, ok, "row %q: its data script %s is written by a script line before it", words[1], words[3])
			var want []string
			for _, s := range statements {
				require.Contains(t, params, s, "row %q", words[1])
				want = append(want, params[s]...)
			}
			require.ElementsMatch(t, dedupe(want), dVars(words[5:]), "row %q runs %v: -D sets their parameters, and only them", words[1], statements)
			if slices.Contains(statements, "RecordWalkFirstPage") || slices.Contains(statements, "RecordWalkPage") {
				rows++
			}
		}
		require.Equal(t, 2, rows, "the walk rows (first page, page 501) were found")
	})

	t.Run("compare-walk", func(t *testing.T) {
		var set []string
		for _, words := range shellLines(t, "compare-walk.sh") {
			if len(words) > 0 && words[0] == "pgbench" && slices.Contains(words, "-f") && strings.Contains(strings.Join(words, " "), "walk-") {
				set = dVars(words)
			}
		}
		require.NotEmpty(t, set, "compare-walk's pgbench of the walk statements")
		// The new side runs RecordWalkFirstPage; the old side RecordWalkPage
		// with its pin set to NULL in the text.
		require.ElementsMatch(t, params["RecordWalkFirstPage"], set, "RecordWalkFirstPage")
		require.ElementsMatch(t, slices.DeleteFunc(slices.Clone(params["RecordWalkPage"]), func(p string) bool { return p == "pinned" }), set,
			"RecordWalkPage, pinned written NULL")
	})
}

var (
	queryName = regexp.MustCompile(`(?m)^-- name: (\w+) :`)
	queryArg  = regexp.MustCompile(`sqlc\.n?arg\(([a-z0-9_]+)\)`)
	dollarArg = regexp.MustCompile(`\$([0-9]+)`)
)

// queryParams reads sql/queries: each statement's parameter names, in
// order of first use (as the scripts' sed turns them into :x).
func queryParams(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../sql/queries/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		text := string(b)
		starts := queryName.FindAllStringSubmatchIndex(text, -1)
		for k, m := range starts {
			end := len(text)
			if k+1 < len(starts) {
				end = starts[k+1][0]
			}
			var names []string
			for _, a := range queryArg.FindAllStringSubmatch(text[m[1]:end], -1) {
				names = append(names, a[1])
			}
			out[text[m[2]:m[3]]] = dedupe(names)
		}
	}
	return out
}

// placeholders is the number of distinct $n of a statement.
func placeholders(sql string) int {
	seen := map[string]bool{}
	for _, m := range dollarArg.FindAllStringSubmatch(sql, -1) {
		seen[m[1]] = true
	}
	return len(seen)
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// dVars is the names that -D name=value words set.
func dVars(words []string) []string {
	var out []string
	for k := 0; k+1 < len(words); k++ {
		if words[k] == "-D" {
			name, _, _ := strings.Cut(words[k+1], "=")
			out = append(out, name)
		}
	}
	return out
}

// shellLines reads a script of tests/load as lines of words: continued
// lines (a trailing backslash) joined, comments dropped, words split at
// blanks outside double quotes and their quotes removed, a ; its own word.
func shellLines(t *testing.T, name string) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../tests/load", name))
	require.NoError(t, err)
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		var (
			words  []string
			word   strings.Builder
			quoted bool
			inWord bool
		)
		flush := func() {
			if inWord {
				words = append(words, word.String())
			}
			word.Reset()
			inWord = false
		}
		for _, r := range line {
			switch {
			case r == '"':
				quoted, inWord = !quoted, true
			case !quoted && (r == ' ' || r == '\t'):
				flush()
			case !quoted && r == ';':
				flush()
				words = append(words, ";")
			default:
				word.WriteRune(r)
				inWord = true
			}
		}
		flush()
		out = append(out, words)
	}
	return out
}
