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
// replaced by Placeholder.
func Secrets(s string) string {
	if !strings.Contains(s, "fsk_") && !strings.Contains(s, "fst_") {
		return s // the common case, without a regular expression
	}
	return credential.ReplaceAllString(s, "${1}."+Placeholder)
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
