package config

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"
)

// Variable documents one environment variable for the configuration
// reference.
type Variable struct {
	Name string
	// ReadBy names the binary (and library) that reads it.
	ReadBy string
	// Type is what the value is written as.
	Type string
	// Default is the value used when the variable is unset, as it would
	// be written; empty when unset means off or derived (Meaning says).
	Default string
	// Meaning says what the variable does, for operators.
	Meaning string
}

// ServeGCPercent is the garbage collector's target `foodsafe serve` sets
// unless GOGC is set (cmd/foodsafe, setServeGC says why).
const ServeGCPercent = 400

// ServeMemoryLimit is the soft memory limit, in bytes, `foodsafe serve`
// sets unless GOMEMLIMIT is set (cmd/foodsafe, setServeMemoryLimit says
// why).
const ServeMemoryLimit = 256 << 20

// Elsewhere are the variables read outside Config: by foodsafe-sync, by
// serve before the configuration is loaded, or by a library on the
// service's behalf. Code that reads another variable adds it here, or the
// reference test fails.
var Elsewhere = []Variable{
	{Name: "GOGC", ReadBy: "foodsafe serve", Type: "integer or off", Default: fmt.Sprint(ServeGCPercent),
		Meaning: fmt.Sprintf("The Go garbage collector's target. serve sets %d unless GOGC is set (Go's default, 100, applies to "+
			"the other commands): it collects a quarter as often, for more read throughput and a higher peak RSS. The starting "+
			"log line says which applies.", ServeGCPercent)},
	{Name: "GOMEMLIMIT", ReadBy: "foodsafe serve", Type: "bytes with a unit (e.g. 512MiB) or off", Default: fmt.Sprintf("%dMiB", ServeMemoryLimit>>20),
		Meaning: fmt.Sprintf("The Go runtime's soft memory limit. serve sets %dMiB unless GOMEMLIMIT is set (none applies to the other "+
			"commands): below it the collector paces by GOGC; near it, it collects more often, which keeps answers of large records "+
			"from growing the heap to GOGC's multiple. Raise it with the memory a process may use; off removes it. The starting log "+
			"line says which applies.", ServeMemoryLimit>>20)},
	{Name: "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, ...", ReadBy: "foodsafe (AWS SDK)",
		Type: "string", Meaning: "With an s3:// FOODSAFE_BLOB_URL: credentials and region through the AWS SDK's default chain " +
			"(environment, shared config files, web identity, ECS task or EC2 instance role); never in the URL, never logged. " +
			"The region defaults to us-east-1."},
	{Name: "FOODSAFE_API_KEY", ReadBy: "foodsafe-sync", Type: "string",
		Meaning: "The API key foodsafe-sync mirrors with (required). Never a flag: flags end up in shell history and process lists."},
	{Name: "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ReadBy: tracedBy, Type: "URL",
		Meaning: "Where traces go: a collector's OTLP/HTTP receiver, e.g. http://otel-collector:4318 (the base URL, to which " +
			"/v1/traces is added) or the full traces URL in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. Unset, tracing is off: nothing " +
			"is instrumented or exported. Traces follow the caller's W3C traceparent (docs/operators.md, Traces)."},
	{Name: "OTEL_SERVICE_NAME", ReadBy: tracedBy, Type: "string", Default: "foodsafe",
		Meaning: "The service.name of the traces (foodsafe-sync's default: foodsafe-sync)."},
	{Name: "OTEL_RESOURCE_ATTRIBUTES", ReadBy: tracedBy, Type: "key=value list",
		Meaning: "More resource attributes of the traces, e.g. deployment.environment.name=production,service.instance.id=api-1."},
	{Name: "OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG", ReadBy: tracedBy, Type: "sampler name, ratio", Default: "parentbased_always_on",
		Meaning: "Which requests are traced: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off " +
			"or parentbased_traceidratio, with the ratio (0 to 1) in OTEL_TRACES_SAMPLER_ARG; parentbased_ samplers follow " +
			"the caller's sampled flag. Production: parentbased_traceidratio with 0.05 (docs/operators.md, Traces). " +
			"An unknown sampler or ratio stops the start."},
	{Name: "OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_EXPORTER_OTLP_CERTIFICATE, " +
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY, OTEL_EXPORTER_OTLP_INSECURE",
		ReadBy: tracedBy, Type: "as the OTLP exporter documents",
		Meaning: "The exporter's headers (a collector's API key), timeout (10s), gzip compression and TLS files, read by " +
			"the OpenTelemetry SDK as its specification says; each also as OTEL_EXPORTER_OTLP_TRACES_*, which wins."},
	{Name: "OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", ReadBy: tracedBy, Type: "string", Default: "http/protobuf",
		Meaning: "Only http/protobuf (a collector's port 4318): another value stops the start rather than being ignored."},
	{Name: "OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT, OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE", ReadBy: tracedBy,
		Type: "milliseconds, count", Default: "5000, 30000, 2048, 512",
		Meaning: "The batch span processor: how often and how much it sends, and the queue of finished spans; a full queue " +
			"drops spans (never blocks a request), so memory stays bounded whatever the traffic."},
	{Name: "OTEL_TRACES_EXPORTER, OTEL_SDK_DISABLED", ReadBy: tracedBy, Type: "otlp or none; true or false",
		Meaning: "OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn tracing off whatever the endpoint; an exporter other " +
			"than otlp stops the start."},
}

// tracedBy names the binaries that read the OpenTelemetry variables.
const tracedBy = "foodsafe, foodsafe-sync (OpenTelemetry SDK)"

// Variables lists every variable the binaries read: Config's fields in
// declaration order (name, default and meaning from their tags; a default
// set in code, like FOODSAFE_METRICS_ADDR's, is read from LoadFrom), then
// Elsewhere.
func Variables() ([]Variable, error) {
	defaults, err := LoadFrom(map[string]string{})
	if err != nil {
		return nil, err
	}
	var vars []Variable
	v := reflect.ValueOf(defaults)
	for _, f := range reflect.VisibleFields(v.Type()) {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			continue
		}
		def, ok := f.Tag.Lookup("envDefault")
		if fv := v.FieldByIndex(f.Index); !ok && !fv.IsZero() {
			def = fmt.Sprint(fv.Interface())
		}
		vars = append(vars, Variable{Name: name, ReadBy: "foodsafe", Type: typeName(f.Type), Default: def, Meaning: f.Tag.Get("desc")})
	}
	return append(vars, Elsewhere...), nil
}

// typeName says how a value of t is written.
func typeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "duration"
	case reflect.TypeFor[Days]():
		return "days or duration"
	case reflect.TypeFor[slog.Level]():
		return "log level"
	case reflect.TypeFor[Prefixes]():
		return "CIDR list"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return t.Kind().String()
}
