package linkcheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The repository's own pages: README.md and docs/ (make check-links).
func TestRepoLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	broken, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckFindsBrokenLinksAndAnchors(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"README.md": "# Title\n\n## Keys, scopes and access\n\n## `foodsafe serve` flags\n\n## Setup\n\n## Setup\n\n" +
			"[ok](#keys-scopes-and-access) [ok code](#foodsafe-serve-flags) [ok dup](#setup-1) [ok file](docs/guide.md)\n" +
			"[ok anchor elsewhere](docs/guide.md#the-guide) [ok dir](internal) [ok line](internal/x.go#L3-L5)\n" +
			"[ok web](https://example.com/missing) [ok ref][r] [ok html](docs/guide.md#kept)\n\n" +
			"[broken anchor](#keys-and-scopes)\n\n" +
			"[broken file](docs/missing.md)\n\n" +
			"[broken anchor elsewhere](docs/guide.md#nowhere)\n\n" +
			"[broken dup](#setup-2)\n\n" +
			"```\n[not a link](nowhere.md)\n```\n\n" +
			"[r]: docs/guide.md\n",
		"docs/guide.md":   "# The guide\n\n<a name=\"kept\"></a>\n\n[back](../README.md#title) [escape](../../etc/passwd) [ref broken][gone]\n\n[gone]: ../nothing.md\n",
		"internal/x.go":   "package x\n",
		"docs/sub/one.md": "[up](../guide.md#the-guide)\n",
	})
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/guide.md", "docs/sub/one.md"}; !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	broken, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.File+" "+b.Dest)
	}
	want := []string{
		"README.md #keys-and-scopes",
		"README.md docs/missing.md",
		"README.md docs/guide.md#nowhere",
		"README.md #setup-2",
		"docs/guide.md ../../etc/passwd",
		"docs/guide.md ../nothing.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("broken:\n%q\nwant\n%q", got, want)
	}
	if broken[0].Line != 15 {
		t.Errorf("line of the first broken link: %d, want 15", broken[0].Line)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Keys, scopes and access":              "keys-scopes-and-access",
		"HTTP behaviour every endpoint shares": "http-behaviour-every-endpoint-shares",
		"foodsafe keys create":                 "foodsafe-keys-create",
		"Scaling out (Citus)":                  "scaling-out-citus",
		"foodsafe_http_*":                      "foodsafe_http_",
		"Mirroring with foodsafe-sync":         "mirroring-with-foodsafe-sync",
		"Ça marche":                            "ça-marche",
		"1. Server error ratio":                "1-server-error-ratio",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}
