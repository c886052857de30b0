package mirror

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/foodsafe/foodsafe/"

// layers are the mirror's packages from top to bottom (paths under
// internal/). A package may import packages of the layers below its own,
// never one of its own layer or above: reading from the top, each leans
// only on what comes after it.
var layers = []struct {
	pkgs []string
	what string
}{
	{[]string{"mirror"}, "the sync: plans, listings, walks, the key-wide feed, files, progress"},
	{[]string{"mirror/export"}, "the typed relations written out as Parquet or CSV"},
	{[]string{"mirror/targets"}, "the SQLite or PostgreSQL database: schema, pages, stream state, files, typed rows"},
	{[]string{"mirror/partnerapi", "mirror/typed"}, "the API's client and resources; the typed layer derived from the schemas"},
}

// outside are the packages of this module the mirror may import: the
// published contract (the JSON Schemas), nothing of the server.
var outside = []string{"schemas"}

func layerOf(pkg string) int {
	for i, l := range layers {
		if slices.Contains(l.pkgs, pkg) {
			return i
		}
	}
	return -1
}

// mirrorImports lists, for every package under internal/mirror, the
// packages of this module its code imports (tests left out), as paths
// under the module.
func mirrorImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "internal/")
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if own, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(own, "internal/"))
			}
		}
	}
	return graph
}

// The mirror's packages point one way: each imports only packages of
// the layers below its own (and the schemas), so a package never leans on
// one that leans on it, directly or through others.
func TestLayers(t *testing.T) {
	graph := mirrorImports(t)
	if len(graph) < len(layers) {
		t.Fatalf("go list found %d packages under internal/mirror: %v", len(graph), graph)
	}
	arrows := 0
	for pkg, imports := range graph {
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("%s is in no layer: add it to layers", pkg)
			continue
		}
		for _, imp := range imports {
			arrows++
			to := layerOf(imp)
			switch {
			case to < 0 && !slices.Contains(outside, imp):
				t.Errorf("%s imports %s, outside the mirror: it shares no code with the server", pkg, imp)
			case to >= 0 && to <= from:
				t.Errorf("%s (layer %d: %s) imports %s (layer %d), which is not below it", pkg, from, layers[from].what, imp, to)
			}
		}
	}
	t.Logf("%d packages, %d arrows between them and to the schemas", len(graph), arrows)
}

// maxTypeLines bounds a type: its declaration and all its methods. A type
// that outgrows it holds more than one responsibility; split it.
const maxTypeLines = 300

// No type of the mirror, with its methods, is longer than maxTypeLines.
func TestTypesStaySmall(t *testing.T) {
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	dirs = slices.DeleteFunc(append(dirs, "."), func(d string) bool {
		m, _ := filepath.Glob(filepath.Join(d, "*.go"))
		return len(m) == 0
	})
	type size struct {
		name  string
		lines int
	}
	var sizes []size
	for _, dir := range dirs {
		lines := typeLines(t, dir)
		for name, n := range lines {
			sizes = append(sizes, size{filepath.Join(dir, name), n})
			if n > maxTypeLines {
				t.Errorf("type %s in %s: %d lines with its methods, more than %d", name, dir, n, maxTypeLines)
			}
		}
	}
	if len(sizes) == 0 {
		t.Fatal("no type found")
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].lines > sizes[j].lines })
	for _, s := range sizes[:min(5, len(sizes))] {
		t.Logf("%s: %d lines", s.name, s.lines)
	}
}

// typeLines measures every type declared in dir's own (non-test) files:
// the lines of its declaration and of each of its methods.
func typeLines(t *testing.T, dir string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	span := func(n ast.Node) int { return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1 }
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						lines[ts.Name.Name] += span(ts)
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil {
					lines[receiverType(d.Recv.List[0].Type)] += span(d)
				}
			}
		}
	}
	return lines
}

func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
