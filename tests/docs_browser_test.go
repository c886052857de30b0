package tests

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// codeSpan is a Markdown code span: what is inside renders literally.
var codeSpan = regexp.MustCompile("`[^`]*`")

// bareTag is text a Markdown renderer takes for an HTML tag.
var bareTag = regexp.MustCompile(`<[A-Za-z/!][^>]*>`)

// Descriptions are Markdown: text such as <collection> outside a code span
// is an HTML tag to the docs page and disappears.
func TestOpenAPIDescriptionsHaveNoBareTags(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.get("/openapi.json")
	require.Equal(t, http.StatusOK, r.Status)
	var doc any
	require.NoError(t, json.Unmarshal(r.Body, &doc))
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && (k == "description" || k == "summary") {
					if tag := bareTag.FindString(codeSpan.ReplaceAllString(s, "")); tag != "" {
						t.Errorf("%s/%s: %q would render as an HTML tag; put it in a code span", path, k, tag)
					}
					continue
				}
				walk(c, path+"/"+k)
			}
		case []any:
			for _, c := range v {
				walk(c, path+"/[]")
			}
		}
	}
	walk(doc, "")
}

// The docs page, rendered by a real browser (headless Chromium), shows the
// walk operation's description with its angle brackets. Opened by deep
// link (#/Tag/operationId), Swagger UI expands the operation. On failure
// a screenshot is kept in .artifacts/.
func TestDocsRenderInChromium(t *testing.T) {
	t.Parallel()
	browser := os.Getenv("CHROMIUM")
	if browser == "" {
		browser = "chromium"
	}
	if _, err := exec.LookPath(browser); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: CI must render the docs page (apt-get install chromium)", browser)
		}
		t.Skipf("%s is not installed (Debian: apt-get install chromium; CI runs this test)", browser)
	}
	a := newApp(t)
	page := a.srv.URL + "/docs#/Collections/walkRecords"
	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against a hung browser
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=20000"}
		cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Run(), "%s: %s", browser, errb.String())
		return out.Bytes()
	}
	dom := string(run("--dump-dom", page))
	ok := strings.Contains(dom, "&lt;collection&gt;:read") && strings.Contains(dom, "walkRecords")
	if !ok {
		dir, err := filepath.Abs("../.artifacts")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(dir, 0o750))
		shot := filepath.Join(dir, "docs-walkRecords.png")
		run("--window-size=1280,4000", "--screenshot="+shot, page)
		t.Fatalf("the rendered walk operation does not show <collection>:read; screenshot in %s", shot)
	}
}

// BenchmarkDocsPageInChromium is how long headless Chromium takes to load
// the docs page (/v1/docs) by deep link, fetch and render the OpenAPI
// document and expand the walk operation, until it dumps the DOM; each
// iteration is a new browser with an empty profile. Run from make bench
// (docs/performance.md, "The OpenAPI document"); skipped without Chromium.
func BenchmarkDocsPageInChromium(b *testing.B) {
	browser := cmp.Or(os.Getenv("CHROMIUM"), "chromium")
	if _, err := exec.LookPath(browser); err != nil {
		b.Skipf("%s is not installed (Debian: apt-get install chromium)", browser)
	}
	a := newApp(b)
	page := a.srv.URL + "/v1/docs#/Collections/walkRecords"
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against a hung browser
		cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir="+b.TempDir(), "--virtual-time-budget=20000", "--dump-dom", page)
		out, err := cmd.Output()
		cancel()
		if err != nil {
			b.Fatalf("%s: %v", browser, err)
		}
		if !strings.Contains(string(out), "walkRecords") {
			b.Fatal("the page did not render the walk operation")
		}
	}
}
