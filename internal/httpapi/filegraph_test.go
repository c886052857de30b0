package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fileRef is one arrow of the package's file graph: code in From names a
// package-level declaration (a func, a method, a type or its field, a var, a
// const) written in To. Why holds the names, for a failure message.
type fileRef struct {
	From, To string
	Why      []string
}

// fileGraph type-checks the package's own (non-test) files from source, its
// imports from the compiler's export data (go list -export, the build cache
// the test binary was built from), and returns every arrow between two of
// its files, sorted. Types make a method call count against the file that
// declares the method, not a file that merely shares its name.
func fileGraph(t testing.TB) []fileRef {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	exports := exportData(t)
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, err := conf.Check("httpapi", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	declared := func(obj types.Object) bool {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return false
		}
		switch o := obj.(type) {
		case *types.Func:
			return o.Parent() == pkg.Scope() || o.Signature().Recv() != nil
		case *types.Var:
			return o.Parent() == pkg.Scope() || o.IsField()
		default:
			return obj.Parent() == pkg.Scope()
		}
	}
	arrows := map[[2]string]map[string]bool{}
	for id, obj := range info.Uses {
		if !declared(obj) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from == to {
			continue
		}
		k := [2]string{from, to}
		if arrows[k] == nil {
			arrows[k] = map[string]bool{}
		}
		arrows[k][qualified(obj)] = true
	}
	var out []fileRef
	for k, why := range arrows {
		r := fileRef{From: k[0], To: k[1]}
		for w := range why {
			r.Why = append(r.Why, w)
		}
		sort.Strings(r.Why)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].From != out[j].From {
			return out[i].From < out[j].From
		}
		return out[i].To < out[j].To
	})
	return out
}

// qualified names a declaration as a reader would look for it: a method or
// a field by its type.
func qualified(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			return typeName(recv.Type()) + "." + o.Name()
		}
	case *types.Var:
		if o.IsField() {
			return "field " + o.Name()
		}
	}
	return obj.Name()
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}

// exportData maps each import path the package needs to its compiled
// export data.
func exportData(t testing.TB) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, ok := strings.Cut(sc.Text(), " ")
		if ok && file != "" {
			m[path] = file
		}
	}
	return m
}

func TestPrintFileGraph(t *testing.T) {
	if os.Getenv("HTTPAPI_FILE_GRAPH") == "" {
		t.Skip("set HTTPAPI_FILE_GRAPH=1 to print the file graph")
	}
	g := fileGraph(t)
	for _, r := range g {
		fmt.Printf("%s -> %s: %s\n", r.From, r.To, strings.Join(r.Why, ", "))
	}
	fmt.Printf("%d arrows\n", len(g))
}
