package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// Tracing is off unless an endpoint is set, and settings the service
// cannot honour stop the start with the variable's name instead of being
// ignored.
func TestSetupReadsTheStandardVariables(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for name, c := range map[string]struct {
		env  map[string]string
		on   bool
		fail string
	}{
		"nothing set":               {},
		"an endpoint":               {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		"a traces endpoint":         {env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		"a ratio":                   {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.05"}, on: true},
		"SDK disabled":              {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		"exporter none":             {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		"another exporter":          {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, fail: "OTEL_TRACES_EXPORTER"},
		"gRPC":                      {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, fail: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		"gRPC for traces":           {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, fail: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		"an unknown sampler":        {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "sometimes"}, fail: "OTEL_TRACES_SAMPLER"},
		"a ratio above one":         {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "5"}, fail: "OTEL_TRACES_SAMPLER_ARG"},
		"a ratio that is no number": {env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"}, fail: "OTEL_TRACES_SAMPLER_ARG"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
				"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_SAMPLER",
				"OTEL_TRACES_SAMPLER_ARG"} {
				t.Setenv(k, c.env[k])
			}
			tr, err := Setup(context.Background(), "foodsafe", log)
			if c.fail != "" {
				if err == nil || !strings.Contains(err.Error(), c.fail) {
					t.Fatalf("err = %v, want one naming %s", err, c.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			if tr.On() != c.on {
				t.Fatalf("on = %v, want %v", tr.On(), c.on)
			}
		})
	}
}
