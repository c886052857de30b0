// Package refdocs writes the reference pages of docs/reference from the
// code they describe: the configuration struct, the table of problem
// kinds, the metrics registry as serve builds it, the MCP tool table and
// the command trees of both binaries (cobra's own generator). Nothing in
// them is written by hand, so they cannot drift: `make docs` regenerates
// them and `make check-docs` fails CI when the committed pages differ.
//
// foodsafe's hidden `docs gen DIR` writes them with its command-line page
// (clidoc); foodsafe-sync's own `docs gen` writes its command-line page
// with clidoc alone, so that the partner client links none of the server.
package refdocs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/foodsafe/foodsafe/internal/app"
	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/httpapi"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/refdocs/clidoc"
)

// The pages, by file name.
const (
	IndexPage         = "README.md"
	ConfigurationPage = "configuration.md"
	ProblemTypesPage  = "problem-types.md"
	MetricsPage       = "metrics.md"
	MCPToolsPage      = "mcp-tools.md"
)

// CLIPage is the page of a binary's command line.
var CLIPage = clidoc.CLIPage

// generated heads every page, as it heads the command-line pages.
const generated = clidoc.Generated

// table writes a Markdown table, as on the command-line pages.
var table = clidoc.Table

// Pages renders every page but the command lines, by file name.
func Pages(ctx context.Context) (map[string][]byte, error) {
	pages := map[string][]byte{IndexPage: Index()}
	for name, render := range map[string]func(context.Context) ([]byte, error){
		ConfigurationPage: Configuration, ProblemTypesPage: ProblemTypes, MetricsPage: Metrics, MCPToolsPage: MCPTools,
	} {
		b, err := render(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pages[name] = b
	}
	return pages, nil
}

// Index is docs/reference/README.md.
func Index() []byte {
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Reference\n\nGenerated from the code by `make docs`; CI fails when a page differs from what the code says " +
		"(`make check-docs`).\n\n")
	table(&b, []string{"page", "what it lists", "generated from"}, [][]string{
		{link(ConfigurationPage), "every environment variable, its default and meaning", "`internal/config` (the `Config` struct's tags, and `Elsewhere`)"},
		{link(CLIPage("foodsafe")), "every command and flag of `foodsafe`", "its cobra command tree (`cmd/foodsafe`)"},
		{link(CLIPage("foodsafe-sync")), "every command and flag of `foodsafe-sync`", "its cobra command tree (`cmd/foodsafe-sync`)"},
		{link("mirror-typed-relations.md"), "every typed relation of a `foodsafe-sync` mirror: columns, types, keys, indexes", "the typed layer `internal/mirror/typed` derives from `schemas/`"},
		{link(ProblemTypesPage), "every problem type: status, when, whether to retry", "the table of kinds, `apperr.Kinds`"},
		{link(MetricsPage), "every metric family: type, labels, help", "the metrics registry as `foodsafe serve` builds it"},
		{link(MCPToolsPage), "every MCP tool: arguments, scopes, the REST route it mirrors", "the MCP tool and route tables (`internal/httpapi`)"},
	})
	return b.Bytes()
}

func link(page string) string { return "[" + page + "](" + page + ")" }

// Configuration is configuration.md.
func Configuration(context.Context) ([]byte, error) {
	vars, err := config.Variables()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Configuration\n\nEvery setting is an environment variable; the defaults suit a developer machine. " +
		"Durations use Go syntax (`500ms`, `20s`, `1h`); the settings measured in days also take whole days (`400d`).\n\n" +
		"## foodsafe\n\nRead once at start by every command of `foodsafe` (`internal/config.Config`).\n\n")
	var own, elsewhere [][]string
	for _, v := range vars {
		def := "unset"
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		if v.ReadBy == "foodsafe" {
			own = append(own, []string{"`" + v.Name + "`", v.Type, def, prose(v.Meaning)})
		} else {
			elsewhere = append(elsewhere, []string{codeList(v.Name), v.ReadBy, def, prose(v.Meaning)})
		}
	}
	table(&b, []string{"variable", "type", "default", "meaning"}, own)
	b.WriteString("\n## Read elsewhere\n\nVariables read outside the configuration struct (`config.Elsewhere`).\n\n")
	table(&b, []string{"variable", "read by", "default", "meaning"}, elsewhere)
	return b.Bytes(), nil
}

// envName and url are what prose sets in code type: the meanings come
// from struct tags, which cannot hold backquotes.
var (
	envName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b`)
	url     = regexp.MustCompile(`\b[a-z0-9]+(?:\(s\))?://[^\s]*[^\s.,:;)]`)
)

func prose(s string) string {
	s = url.ReplaceAllString(s, "`$0`")
	var out strings.Builder
	// Names inside a URL are already code.
	for i, part := range strings.Split(s, "`") {
		if i%2 == 0 {
			part = envName.ReplaceAllString(part, "`$0`")
		} else {
			part = "`" + part + "`"
		}
		out.WriteString(part)
	}
	return out.String()
}

// codeList sets "A, B, ..." as code names.
func codeList(s string) string {
	parts := strings.Split(s, ", ")
	for i, p := range parts {
		if p != "..." {
			parts[i] = "`" + p + "`"
		}
	}
	return strings.Join(parts, ", ")
}

// ProblemTypes is problem-types.md.
func ProblemTypes(context.Context) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Problem types\n\nEvery failure is an `application/problem+json` document (RFC 9457) whose `type` is " +
		"`{FOODSAFE_BASE_URL}/problems/{code}`; that URL serves the row below as HTML, or as JSON when asked " +
		"(`Accept: application/json`). The rows are `apperr.Kinds`, in status order.\n\n")
	var rows [][]string
	for _, k := range apperr.Kinds {
		rows = append(rows, []string{"`" + string(k.Code) + "`", fmt.Sprint(k.Status), k.Title, k.When, k.Retry})
	}
	table(&b, []string{"code", "status", "title", "when", "retry"}, rows)
	return b.Bytes(), nil
}

// Metrics is metrics.md: the registry of a service built as serve builds
// it (app.New), with the operator handler's own families. Building it
// opens no connection: the pool connects on first use, and the key cache
// (which would listen) is left off.
func Metrics(ctx context.Context) ([]byte, error) {
	fams, err := families(ctx)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Metrics\n\nThe families `foodsafe serve` exposes on `FOODSAFE_METRICS_ADDR` (`GET /metrics`), " +
		"from its registry, sorted by name. Label values are bounded; see the family's help for them.\n")
	prefix := ""
	var rows [][]string
	flush := func() {
		if len(rows) > 0 {
			fmt.Fprintf(&b, "\n## %s_*\n\n", prefix)
			table(&b, []string{"family", "type", "labels", "help"}, rows)
			rows = nil
		}
	}
	for _, f := range fams {
		if p, _, _ := strings.Cut(f.Name, "_"); p != prefix {
			flush()
			prefix = p
		}
		labels := make([]string, len(f.Labels))
		for i, l := range f.Labels {
			labels[i] = "`" + l + "`"
		}
		rows = append(rows, []string{"`" + f.Name + "`", f.Type, strings.Join(labels, ", "), f.Help})
	}
	flush()
	return b.Bytes(), nil
}

// families are the metric families of a service built as serve builds it.
func families(ctx context.Context) ([]metrics.Family, error) {
	cfg, err := config.LoadFrom(map[string]string{})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "foodsafe-docs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.KeyCache = false
	cfg.BlobDir = dir
	if cfg.MetricsAddr == "" {
		return nil, fmt.Errorf("metrics are off by default")
	}
	a, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), app.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = a.Close(context.WithoutCancel(ctx)) }()
	a.OpsHandler() // registers the scrape handler's own families
	return a.Metrics.Families()
}

// MCPTools is mcp-tools.md.
func MCPTools(context.Context) ([]byte, error) {
	tools, err := httpapi.Tools()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# MCP tools\n\nThe tools of `POST /mcp` (Model Context Protocol, stateless, the partner key as bearer), " +
		"sorted by name. Each is the other face of a REST route: same access check, parameters, cursors and answer. " +
		"`tools/list` shows a key only the tools its grants can use. Each tool's output schema is its answer's shape; " +
		"a record in it (walk_records, get_record, walk_all_records) names its collection from an enum of the 24, and " +
		"describe_collection gives the JSON Schema its `data` follows.\n\n")
	var rows [][]string
	for _, t := range tools {
		route := "none"
		if t.Route != "" {
			route = "`" + t.Route + "`"
		}
		rows = append(rows, []string{"[`" + t.Name + "`](#" + t.Name + ")", t.Title, route})
	}
	table(&b, []string{"tool", "title", "REST route"}, rows)
	for _, t := range tools {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", t.Name, t.Description)
		if t.Route == "" {
			fmt.Fprintf(&b, "REST route: none; `GET /v1/openapi.json` gives the same schemas as its components `<Collection>Data` "+
				"(e.g. `AreasData`). Needs: %s.\n\n", needs(t))
		} else {
			fmt.Fprintf(&b, "REST route: `%s`. Needs: %s.\n\n", t.Route, needs(t))
		}
		if len(t.Arguments) == 0 {
			b.WriteString("No arguments.\n")
			continue
		}
		var args [][]string
		for _, a := range t.Arguments {
			req := "no"
			if a.Required {
				req = "yes"
			}
			args = append(args, []string{"`" + a.Name + "`", a.Type, req, a.Description})
		}
		table(&b, []string{"argument", "type", "required", "description"}, args)
	}
	return b.Bytes(), nil
}

// needs says what grant a tool needs.
func needs(t httpapi.ToolDoc) string {
	if t.Needs != "" {
		return t.Needs
	}
	if len(t.Scopes) > 0 {
		return "`" + strings.Join(t.Scopes, "`, `") + "` on the restaurant"
	}
	for _, a := range t.Arguments {
		if a.Name == "restaurantId" {
			return "any grant on the restaurant"
		}
	}
	return "any key"
}
