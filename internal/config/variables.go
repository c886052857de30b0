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

// Elsewhere are the variables read outside Config: by foodsafe-sync, by
// serve before the configuration is loaded, or by a library on the
// service's behalf. Code that reads another variable adds it here, or the
// reference test fails.
var Elsewhere = []Variable{
	{Name: "GOGC", ReadBy: "foodsafe serve", Type: "integer or off", Default: fmt.Sprint(ServeGCPercent),
		Meaning: fmt.Sprintf("The Go garbage collector's target. serve sets %d unless GOGC is set (Go's default, 100, applies to "+
			"the other commands): it collects a quarter as often, for more read throughput and a higher peak RSS. The starting "+
			"log line says which applies. GOMEMLIMIT works as Go documents it.", ServeGCPercent)},
	{Name: "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION, ...", ReadBy: "foodsafe (AWS SDK)",
		Type: "string", Meaning: "With an s3:// FOODSAFE_BLOB_URL: credentials and region through the AWS SDK's default chain " +
			"(environment, shared config files, web identity, ECS task or EC2 instance role); never in the URL, never logged. " +
			"The region defaults to us-east-1."},
	{Name: "FOODSAFE_API_KEY", ReadBy: "foodsafe-sync", Type: "string",
		Meaning: "The API key foodsafe-sync mirrors with (required). Never a flag: flags end up in shell history and process lists."},
}

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
