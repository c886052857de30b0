// Package redact keeps the secret half of credentials out of everything the
// service writes down or echoes: log lines, audit rows, problem documents.
// Clients paste keys in odd places (a path, X-Request-ID, a body field);
// wherever such text is recorded, `fsk_<public>.<secret>` becomes
// `fsk_<public>.[redacted]`, so support can still quote the public id.
package redact

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
)

// credential matches a key or session token, or the start of one: the
// prefix, a public id, a dot and whatever secret-like text follows.
var credential = regexp.MustCompile(`(fs[kt]_[a-z0-9]{12,32})\.[A-Za-z0-9_-]+`)

// Placeholder replaces a secret.
const Placeholder = "[redacted]"

// Secrets returns s with the secret half of every credential in it
// replaced by Placeholder, a credential written with percent-escapes (in
// a path as sent: fsk_<public>%2E<secret>) included.
func Secrets(s string) string {
	if strings.Contains(s, "%") {
		s = escaped(s)
	}
	if !strings.Contains(s, "fsk_") && !strings.Contains(s, "fst_") {
		return s // the common case, without a regular expression
	}
	return credential.ReplaceAllString(s, "${1}."+Placeholder)
}

// escaped redacts the credentials s holds once its percent-escapes are
// decoded (as net/http decodes a path; an invalid escape stays as it is),
// in s as written: each secret's bytes, escapes and all, become
// Placeholder, and the rest of s is left as it was sent.
func escaped(s string) string {
	decoded := make([]byte, 0, len(s))
	at := make([]int, 0, len(s)+1) // at[i]: where decoded byte i starts in s
	for i := 0; i < len(s); {
		at = append(at, i)
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			decoded = append(decoded, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 3
			continue
		}
		decoded = append(decoded, s[i])
		i++
	}
	at = append(at, len(s))
	if len(decoded) == len(s) {
		return s // no escape
	}
	var b strings.Builder
	prev := 0
	for _, m := range credential.FindAllSubmatchIndex(decoded, -1) {
		// m[3] ends the public id; the secret follows its dot.
		b.WriteString(s[prev:at[m[3]+1]])
		b.WriteString(Placeholder)
		prev = at[m[1]]
	}
	if prev == 0 {
		return s
	}
	b.WriteString(s[prev:])
	return b.String()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// Contains reports whether s holds a credential.
func Contains(s string) bool { return Secrets(s) != s }

// Handler wraps a slog.Handler so every message, string attribute and
// error attribute passes through Secrets before it is written.
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ inner slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Secrets(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = attr(a)
	}
	return handler{h.inner.WithAttrs(clean)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.inner.WithGroup(name)} }

func attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Secrets(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, c := range g {
			clean[i] = attr(c)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Secrets(err.Error()))
		}
	}
	return a
}
