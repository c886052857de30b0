package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	testKey    = "fsk_abcdefghijkl1234.s3cr3tS3CR3Tsecret_-x"
	testSecret = "s3cr3tS3CR3Tsecret_-x"
)

// export sends spans made by f through the redacting exporter and
// returns what reached the exporter behind it.
func export(t *testing.T, f func(tr trace.Tracer)) tracetest.SpanStubs {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(redacting{mem}))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	f(tp.Tracer("test")) // a syncer exports each span as it ends
	return mem.GetSpans()
}

// Whatever a client pasted where a span copies it, the secret half of a
// key never reaches the collector, and URLs lose their query strings; a
// span with nothing to clean goes out as it was.
func TestExportedSpansHoldNoSecret(t *testing.T) {
	spans := export(t, func(tr trace.Tracer) {
		_, s := tr.Start(context.Background(), "GET /v1/restaurants/"+testKey,
			trace.WithAttributes(attribute.String("url.path", "/v1/restaurants/"+testKey+"/collections"),
				attribute.String("url.full", "http://store/sha256/ab/abcd?X-Amz-Signature=deadbeef&x-id=GetObject"),
				attribute.String("url.query", "signature=abc"),
				attribute.StringSlice("http.request.header.x", []string{"Bearer " + testKey, "plain"}),
				attribute.Int("http.response.status_code", 404)))
		s.RecordError(errors.New("lookup of " + testKey + " failed"))
		s.SetStatus(1, "key "+testKey)
		s.End()
		_, clean := tr.Start(context.Background(), "clean", trace.WithAttributes(attribute.String("url.path", "/health/live")))
		clean.End()
	})
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	s := spans[0]
	all := s.Name + " " + s.Status.Description
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		attrs[kv.Key] = kv.Value
		all += " " + kv.Value.String()
	}
	for _, e := range s.Events {
		for _, kv := range e.Attributes {
			all += " " + kv.Value.String()
		}
	}
	if strings.Contains(all, testSecret) {
		t.Errorf("a secret was exported: %s", all)
	}
	if !strings.Contains(all, "fsk_abcdefghijkl1234.[redacted]") {
		t.Errorf("the public id is kept for support to quote: %s", all)
	}
	if got := attrs["url.full"].AsString(); got != "http://store/sha256/ab/abcd" {
		t.Errorf("url.full = %q, want no query", got)
	}
	if got := attrs["url.query"].AsString(); got != "" {
		t.Errorf("url.query = %q, want empty", got)
	}
	if got := attrs["http.response.status_code"].AsInt64(); got != 404 {
		t.Errorf("other attributes are kept: status %d", got)
	}
	if got := spans[1].Attributes; len(got) != 1 || got[0].Value.AsString() != "/health/live" {
		t.Errorf("a clean span changed: %v", got)
	}
}
