package httpapi

import (
	"slices"
	"strings"
	"testing"
)

// layers are httpapi's layers from top to bottom; a file belongs to the
// layer its name starts with (api.go, http_auth.go, op_records.go...). A
// file may name declarations of its own layer and of the layers below it,
// never of a layer above: reading from the top, each file only leans on
// what comes after it.
var layers = []struct{ prefix, what string }{
	{"api", "wiring: New and the route table"},
	{"http", "transport and middleware: REST and MCP faces (and the batch face of many writes), auth, limits, logs, framing, compression"},
	{"op", "operations: the resources both faces serve"},
	{"resp", "responses: answers, problem documents, prose"},
	{"req", "requests: parameters, bodies, the request both faces build"},
	{"base", "the API receiver and the request state it carries"},
}

// keptAgainst are the arrows allowed to run up, each with its reason: the
// API receiver every layer hangs its methods on holds the state of three
// of them, and that state's type is declared beside the code that uses it.
var keptAgainst = map[[2]string]string{
	{"base.go", "http_mcp_tools.go"}: "API.mcpTools: the MCP tools, built once from the route table",
	{"base.go", "op_health.go"}:      "API.health: what the health routes keep between requests",
	{"base.go", "op_uploads.go"}:     "API.uploads: the upload slots, a per-key cap across requests",
}

func layerOf(file string) int {
	prefix, _, _ := strings.Cut(strings.TrimSuffix(file, ".go"), "_")
	for i, l := range layers {
		if l.prefix == prefix {
			return i
		}
	}
	return -1
}

func TestLayers(t *testing.T) {
	g := fileGraph(t)
	up, kept := 0, 0
	seen := map[[2]string]bool{}
	for _, r := range g {
		seen[[2]string{r.From, r.To}] = true
		from, to := layerOf(r.From), layerOf(r.To)
		if from < 0 {
			t.Errorf("%s: no layer (name it after one of %v)", r.From, layerPrefixes())
			continue
		}
		if to < 0 || to >= from {
			continue
		}
		if _, ok := keptAgainst[[2]string{r.From, r.To}]; ok {
			kept++
			continue
		}
		up++
		t.Errorf("%s (%s) names %s of %s (%s), a layer above it", r.From, layers[from].prefix,
			strings.Join(r.Why, ", "), r.To, layers[to].prefix)
	}
	for k, why := range keptAgainst {
		if !seen[k] {
			t.Errorf("%s -> %s is kept against the direction (%s) but no longer exists: remove it from keptAgainst", k[0], k[1], why)
		}
	}
	t.Logf("%d arrows between files, %d against the direction, %d of them kept", len(g), up+kept, kept)
}

func layerPrefixes() []string {
	var out []string
	for _, l := range layers {
		out = append(out, l.prefix+"_")
	}
	return out
}

// Within a layer too, the files read in one direction: no file names
// another that names it back, directly or through others (the kept arrows
// aside), so the files have an order in which each leans only on those
// after it.
func TestFilesHaveNoCycle(t *testing.T) {
	next := map[string][]string{}
	for _, r := range fileGraph(t) {
		if _, ok := keptAgainst[[2]string{r.From, r.To}]; !ok {
			next[r.From] = append(next[r.From], r.To)
		}
	}
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(f string)
	visit = func(f string) {
		state[f] = open
		path = append(path, f)
		for _, g := range next[f] {
			switch state[g] {
			case unseen:
				visit(g)
			case open:
				i := len(path) - 1
				for path[i] != g {
					i--
				}
				t.Errorf("files name each other: %s -> %s", strings.Join(path[i:], " -> "), g)
			}
		}
		path = path[:len(path)-1]
		state[f] = done
	}
	var files []string
	for f := range next {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		if state[f] == unseen {
			visit(f)
		}
	}
}
