package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/foodsafe/foodsafe/internal/redact"
)

// redacting is the exporter every span leaves through: whatever a client
// put where an attribute copies it (a key pasted into a path, a header, a
// tool name; a database error quoting a value), the secret half of a
// credential never reaches the collector, and a URL keeps no query string
// (signed download URLs and cursors live there). It works on the batch
// processor's goroutine, off the request path, and copies a span only
// when something in it must change.
type redacting struct{ next sdktrace.SpanExporter }

func (r redacting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out, copied := spans, false
	for i, s := range spans {
		if c, changed := clean(s); changed {
			if !copied {
				out, copied = append([]sdktrace.ReadOnlySpan(nil), spans...), true
			}
			out[i] = c
		}
	}
	return r.next.ExportSpans(ctx, out)
}

func (r redacting) Shutdown(ctx context.Context) error { return r.next.Shutdown(ctx) }

// cleanSpan is a span with its attributes, events, name or status
// description cleaned; the rest is the span's own.
type cleanSpan struct {
	sdktrace.ReadOnlySpan
	name   string
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	status sdktrace.Status
}

func (c cleanSpan) Name() string                     { return c.name }
func (c cleanSpan) Attributes() []attribute.KeyValue { return c.attrs }
func (c cleanSpan) Events() []sdktrace.Event         { return c.events }
func (c cleanSpan) Status() sdktrace.Status          { return c.status }

// clean returns s cleaned, and whether anything changed.
func clean(s sdktrace.ReadOnlySpan) (sdktrace.ReadOnlySpan, bool) {
	c := cleanSpan{ReadOnlySpan: s, name: redact.Secrets(s.Name()), status: s.Status()}
	changed := c.name != s.Name()
	var ch bool
	c.attrs, ch = cleanAttrs(s.Attributes())
	changed = changed || ch
	c.events = s.Events()
	copied := false
	for i, e := range c.events {
		if attrs, ch := cleanAttrs(e.Attributes); ch {
			if !copied {
				c.events, copied = append([]sdktrace.Event(nil), c.events...), true
			}
			c.events[i].Attributes = attrs
			changed = true
		}
	}
	if d := redact.Secrets(c.status.Description); d != c.status.Description {
		c.status.Description = d
		changed = true
	}
	if !changed {
		return s, false
	}
	return c, true
}

// cleanAttrs returns attrs with secrets replaced and URL queries removed,
// and whether anything changed (attrs itself when nothing did).
func cleanAttrs(attrs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	var out []attribute.KeyValue
	for i, kv := range attrs {
		v, ok := cleanValue(kv)
		if !ok {
			continue
		}
		if out == nil {
			out = append(make([]attribute.KeyValue, 0, len(attrs)), attrs[:i]...)
		}
		out = append(out, attribute.KeyValue{Key: kv.Key, Value: v})
		for _, rest := range attrs[i+1:] {
			if v, ok := cleanValue(rest); ok {
				rest.Value = v
			}
			out = append(out, rest)
		}
		return out, true
	}
	return attrs, false
}

// cleanValue is kv's value cleaned, and whether it differs.
func cleanValue(kv attribute.KeyValue) (attribute.Value, bool) {
	switch kv.Value.Type() {
	case attribute.STRING:
		s := kv.Value.AsString()
		c := redact.Secrets(s)
		if kv.Key == "url.full" || kv.Key == "url.query" {
			c = withoutQuery(c, kv.Key == "url.query")
		}
		return attribute.StringValue(c), c != s
	case attribute.STRINGSLICE:
		ss := kv.Value.AsStringSlice()
		changed := false
		for i, s := range ss {
			if c := redact.Secrets(s); c != s {
				ss[i], changed = c, true
			}
		}
		return attribute.StringSliceValue(ss), changed
	}
	return kv.Value, false
}

// withoutQuery cuts a URL's query and fragment (all of a url.query).
func withoutQuery(u string, isQuery bool) string {
	if isQuery {
		return ""
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}
