// Package linkcheck checks the relative links of the repository's
// Markdown, offline: every link to a path resolves to a file or directory
// of the repository, and every anchor (#...) to a heading of the page it
// names, with the anchors GitHub gives headings. Links with a scheme
// (https:, mailto:) are not followed. Markdown is read by goldmark, so a
// link in a code block is not a link and a reference-style link is.
package linkcheck

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Broken is a link that does not resolve.
type Broken struct {
	// File is the page holding the link, relative to the root; Line is
	// the first line of the block the link is in.
	File   string
	Line   int
	Dest   string
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Dest, b.Reason)
}

// Files are the pages the repository promises links in: README.md and
// every Markdown file under docs/.
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == filepath.Join(root, "docs") {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// Check reads files (slash paths relative to root) and returns their
// broken links, in file and line order.
func Check(root string, files []string) ([]Broken, error) {
	c := &checker{root: root, anchors: map[string][]string{}}
	var broken []Broken
	for _, f := range files {
		b, err := c.check(f)
		if err != nil {
			return nil, err
		}
		broken = append(broken, b...)
	}
	return broken, nil
}

type checker struct {
	root string
	// anchors are the anchors of each page read so far.
	anchors map[string][]string
}

var md = goldmark.New(goldmark.WithExtensions(extension.GFM))

func (c *checker) parse(file string) (ast.Node, []byte, error) {
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(file)))
	if err != nil {
		return nil, nil, err
	}
	return md.Parser().Parse(text.NewReader(src)), src, nil
}

func (c *checker) check(file string) ([]Broken, error) {
	doc, src, err := c.parse(file)
	if err != nil {
		return nil, err
	}
	var broken []Broken
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest string
		switch l := n.(type) {
		case *ast.Link:
			dest = string(l.Destination)
		case *ast.Image:
			dest = string(l.Destination)
		default:
			return ast.WalkContinue, nil
		}
		if reason := c.resolve(file, dest); reason != "" {
			broken = append(broken, Broken{File: file, Line: line(n, src), Dest: dest, Reason: reason})
		}
		return ast.WalkContinue, nil
	})
	return broken, err
}

// scheme marks a link that leaves the repository (https:, mailto:, //host).
var scheme = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*:|//)`)

// lineAnchor is GitHub's anchor of a line (range) of a source file.
var lineAnchor = regexp.MustCompile(`^L\d+(-L\d+)?$`)

// resolve says why dest, a link in file, does not resolve ("" when it does).
func (c *checker) resolve(file, dest string) string {
	if scheme.MatchString(dest) {
		return ""
	}
	target, frag, _ := strings.Cut(dest, "#")
	target, _, _ = strings.Cut(target, "?")
	p, err := url.PathUnescape(target)
	if err != nil {
		return "malformed path"
	}
	switch {
	case p == "":
		p = file
	case strings.HasPrefix(p, "/"):
		p = path.Clean(strings.TrimPrefix(p, "/"))
	default:
		p = path.Join(path.Dir(file), p)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "outside the repository"
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(p)))
	if err != nil {
		return "no such file or directory"
	}
	if frag == "" {
		return ""
	}
	if info.IsDir() {
		p = path.Join(p, "README.md") // GitHub shows a directory's README under its listing
	}
	if !strings.HasSuffix(p, ".md") {
		if lineAnchor.MatchString(frag) {
			return ""
		}
		return "an anchor into a file that is not Markdown"
	}
	anchor, err := url.PathUnescape(frag)
	if err != nil {
		return "malformed anchor"
	}
	anchors, err := c.anchorsOf(p)
	if err != nil {
		return "cannot read " + p
	}
	if !slices.Contains(anchors, anchor) {
		return "no heading with anchor #" + anchor + " in " + p
	}
	return ""
}

// htmlAnchor is an anchor set by hand in HTML: <a name="x"> or id="x".
var htmlAnchor = regexp.MustCompile(`<a\s[^>]*\b(?:name|id)="([^"]+)"`)

// anchorsOf lists the anchors of a page: one per heading, as GitHub
// makes them (duplicates get -1, -2...), and those set in HTML.
func (c *checker) anchorsOf(file string) ([]string, error) {
	if a, ok := c.anchors[file]; ok {
		return a, nil
	}
	doc, src, err := c.parse(file)
	if err != nil {
		return nil, err
	}
	var anchors []string
	seen := map[string]int{}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			anchors = append(anchors, uniqueSlug(Slug(plainText(h, src)), seen))
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	for _, m := range htmlAnchor.FindAllSubmatch(src, -1) {
		anchors = append(anchors, string(m[1]))
	}
	c.anchors[file] = anchors
	return anchors, nil
}

// Slug is GitHub's anchor of a heading's text: lower case, spaces become
// hyphens, and every character but letters, digits, marks, hyphens and
// underscores is dropped.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func uniqueSlug(s string, seen map[string]int) string {
	n, dup := seen[s]
	seen[s] = n + 1
	if !dup {
		return s
	}
	for {
		cand := fmt.Sprintf("%s-%d", s, n)
		if _, taken := seen[cand]; !taken {
			seen[cand] = 1
			return cand
		}
		n++
	}
}

// plainText is the text of a heading as GitHub slugs it: its words and
// code spans, without markup.
func plainText(n ast.Node, src []byte) string {
	var b bytes.Buffer
	_ = ast.Walk(n, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := n.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// line is the first line of the block holding n.
func line(n ast.Node, src []byte) int {
	for ; n != nil; n = n.Parent() {
		if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
			return bytes.Count(src[:n.Lines().At(0).Start], []byte("\n")) + 1
		}
	}
	return 0
}
