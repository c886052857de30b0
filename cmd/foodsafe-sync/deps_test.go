package main

import (
	"os/exec"
	"strings"
	"testing"
)

// foodsafe-sync is the client partners install: it must not link the
// server. Of this module it may build in only the mirror, the command-line
// helpers, the schemas, the command-line page generator and the tracing
// setup (telemetry and its span helper, with the redactor and the version
// they use; the instrumentation of the server's stores is apart, in
// telemetry/stores); and none of the libraries only the server needs
// (HTTP framework, Redis, object storage, metrics, MCP, OpenAPI).
func TestLinksNoneOfTheServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/foodsafe/foodsafe/"
	allowed := []string{"cmd/foodsafe-sync", "internal/mirror", "internal/cmdline", "internal/refdocs/clidoc", "schemas",
		"internal/telemetry", "internal/telemetry/span", "internal/redact", "internal/version"}
	serverOnly := []string{
		"github.com/gin-gonic/", "github.com/redis/", "github.com/aws/", "github.com/prometheus/",
		"github.com/ulule/", "github.com/modelcontextprotocol/", "github.com/getkin/",
	}
	var n int
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if own, ok := strings.CutPrefix(pkg, module); ok {
			if !hasPrefix(own, allowed) {
				t.Errorf("foodsafe-sync links %s", pkg)
			}
			continue
		}
		if hasPrefix(pkg, serverOnly) {
			t.Errorf("foodsafe-sync links %s, a library of the server", pkg)
		}
	}
	if n == 0 {
		t.Fatal("go list listed no package")
	}
}

// hasPrefix reports whether pkg is one of the packages (or under one of
// the folders) of prefixes.
func hasPrefix(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if pkg == p || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}
