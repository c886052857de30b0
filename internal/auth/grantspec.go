package auth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
)

// ParseGrantSpec reads the admin CLI's `RESTAURANT=SCOPE[,SCOPE...]`.
// Every scope must be a catalog scope.
func ParseGrantSpec(spec string) (Grant, error) {
	r, list, ok := strings.Cut(spec, "=")
	if !ok || list == "" {
		return Grant{}, fmt.Errorf("grant %q: want RESTAURANT=SCOPE[,SCOPE...]", spec)
	}
	if !ids.Valid(r) {
		return Grant{}, fmt.Errorf("grant %q: %q is not a valid restaurant id", spec, r)
	}
	scopes, err := ParseScopes(list)
	if err != nil {
		return Grant{}, fmt.Errorf("grant %q: %w", spec, err)
	}
	return Grant{RestaurantID: r, Scopes: scopes}, nil
}

// ParseScopes reads a comma-separated list of catalog scopes.
func ParseScopes(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if !catalog.ValidScope(s) {
			return nil, fmt.Errorf("unknown scope %q (see `foodsafe keys scopes`)", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// MaxGrantLine bounds a line of ReadGrantSpecs: a restaurant id (at most
// 200 characters) with every scope of the catalog is under 2 KiB.
const MaxGrantLine = 16 << 10

// ReadGrantSpecs reads the grants of `keys create --grants-file` and
// `keys grant --grants-file`: one RESTAURANT=SCOPE[,SCOPE...] per line,
// as the --grant flag takes one (a key of 20,000 restaurants does not fit
// on a command line). Blank lines and lines starting with # are skipped,
// and spaces around a line do not count. The first line that does not
// read fails the whole file, naming its number.
func ReadGrantSpecs(r io.Reader) ([]Grant, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), MaxGrantLine)
	var out []Grant
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		g, err := ParseGrantSpec(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, g)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return nil, fmt.Errorf("line %d: longer than %d bytes", n+1, MaxGrantLine)
	case err != nil:
		return nil, err
	}
	return out, nil
}
