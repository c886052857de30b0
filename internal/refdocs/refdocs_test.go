package refdocs

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/metrics"
)

// rows are the cells of a page's table rows (not headers), pipes
// unescaped.
func rows(page []byte) [][]string {
	var out [][]string
	for line := range strings.Lines(string(page)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
			continue
		}
		line = strings.ReplaceAll(line, `\|`, "\x00")
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "\x00", "|")
		}
		out = append(out, cells)
	}
	return out
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// codes are the code spans of a cell.
func codes(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

var foodsafeVar = regexp.MustCompile(`\bFOODSAFE_[A-Z0-9_]*[A-Z0-9]\b`)

// variablesInSource are the variables the binaries' code names, read
// from the source rather than from the configuration package: every
// FOODSAFE_* in a string (messages, constants, tags), every env tag, and
// every os.Getenv / os.LookupEnv of a constant. Tests and the test
// database harness are not the binaries.
func variablesInSource(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdb" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Field:
					if n.Tag != nil {
						tag, _ := strconv.Unquote(n.Tag.Value)
						if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("env"), ","); name != "" {
							found[name] = fset.Position(n.Pos()).String()
						}
					}
				case *ast.BasicLit:
					if n.Kind == token.STRING {
						s, _ := strconv.Unquote(n.Value)
						for _, name := range foodsafeVar.FindAllString(s, -1) {
							found[name] = fset.Position(n.Pos()).String()
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) == 1 {
						if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") {
							if lit, ok := n.Args[0].(*ast.BasicLit); ok {
								name, _ := strconv.Unquote(lit.Value)
								found[name] = fset.Position(n.Pos()).String()
							}
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found
}

// Every variable the code reads is on the configuration page, and every
// FOODSAFE_* variable the page lists is one the code reads.
func TestConfigurationListsEveryVariableTheBinariesRead(t *testing.T) {
	page, err := Configuration(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range rows(page) {
		for _, name := range codes(r[0]) {
			listed[name] = true
		}
		if len(r) != 4 || strings.TrimSpace(r[3]) == "" {
			t.Errorf("row %q: no meaning (a desc tag in config.Config, or Meaning in config.Elsewhere)", r)
		}
	}
	read := variablesInSource(t)
	if len(read) < 30 {
		t.Fatalf("found only %d variables in the source: %v", len(read), read)
	}
	for name, where := range read {
		if !listed[name] {
			t.Errorf("%s (%s) is not on the configuration page: a field of config.Config, or an entry of config.Elsewhere", name, where)
		}
	}
	for name := range listed {
		if strings.HasPrefix(name, "FOODSAFE_") {
			if _, ok := read[name]; !ok {
				t.Errorf("the configuration page lists %s, which no code reads", name)
			}
		}
	}
}

// The page lists each row of the table of kinds, and nothing else.
func TestProblemTypesListEveryKind(t *testing.T) {
	page, err := ProblemTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, r := range rows(page)[1:] {
		got = append(got, strings.Join(codes(r[0]), "")+" "+r[1])
	}
	for _, k := range apperr.Kinds {
		want = append(want, string(k.Code)+" "+strconv.Itoa(k.Status))
	}
	if !slices.Equal(got, want) {
		t.Errorf("page rows %q, want %q", got, want)
	}
}

// typeLine is a family in the text exposition.
var typeLine = regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)

// Every family a running service exposes after traffic is on the page
// with its type (the HTTP families appear with the first request), and
// every family on the page is one the service exposes or declares.
func TestMetricsListEveryFamily(t *testing.T) {
	ctx := context.Background()
	page, err := Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, r := range rows(page) {
		if names := codes(r[0]); len(names) == 1 {
			listed[names[0]] = r[1]
		}
	}
	cfg, err := config.LoadFrom(map[string]string{"FOODSAFE_KEY_CACHE": "false", "FOODSAFE_BLOB_DIR": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.WithoutCancel(ctx)) })
	ops := a.OpsHandler()
	for _, path := range []string{"/health/live", "/no/such/path"} {
		a.Engine.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	rec := httptest.NewRecorder()
	ops.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	exposed := map[string]string{}
	for _, m := range typeLine.FindAllStringSubmatch(rec.Body.String(), -1) {
		exposed[m[1]] = m[2]
	}
	if len(exposed) < 50 || exposed["foodsafe_http_requests_total"] != "counter" {
		t.Fatalf("exposition has %d families: %s", len(exposed), rec.Body.String())
	}
	for name, typ := range exposed {
		if listed[name] != typ {
			t.Errorf("%s (%s) is exposed, the page says %q", name, typ, listed[name])
		}
	}
	// A vector shows in a scrape after its first event (an ingest
	// rejection needs a key and a database); the registry declares it.
	fams, err := a.Metrics.Families()
	if err != nil {
		t.Fatal(err)
	}
	for name := range listed {
		_, ok := exposed[name]
		if !ok && !slices.ContainsFunc(fams, func(f metrics.Family) bool { return f.Name == name }) {
			t.Errorf("the page lists %s, which the service neither exposes nor declares", name)
		}
	}
}

// Each tool has its section, with each of its arguments.
func TestMCPToolsListEveryTool(t *testing.T) {
	page, err := MCPTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tools, err := httpapi.Tools()
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) < 8 {
		t.Fatalf("%d tools", len(tools))
	}
	sections := strings.Split(string(page), "\n## ")
	var headings []string
	for _, s := range sections[1:] {
		h, body, _ := strings.Cut(s, "\n")
		headings = append(headings, h)
		i := slices.IndexFunc(tools, func(d httpapi.ToolDoc) bool { return d.Name == h })
		if i < 0 {
			t.Errorf("section %s is no tool", h)
			continue
		}
		for _, arg := range tools[i].Arguments {
			if !strings.Contains(body, "| `"+arg.Name+"` |") {
				t.Errorf("argument %s of %s is not in its section", arg.Name, h)
			}
		}
	}
	if len(headings) != len(tools) {
		t.Errorf("sections %v for %d tools", headings, len(tools))
	}
}
