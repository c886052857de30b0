package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The trace receiver of the tests is Jaeger all-in-one (v2: the
// OpenTelemetry Collector with Jaeger's storage and query API), pinned in
// tests/tools/jaeger/go.mod, built like the S3 server (toolBinary). It
// receives OTLP over HTTP, keeps traces in memory and answers Jaeger's
// query API, all on loopback ports.

// jaeger is one Jaeger process.
type jaeger struct {
	// OTLP is the receiver's base URL: OTEL_EXPORTER_OTLP_ENDPOINT.
	OTLP  string
	query string
	out   *logBuffer
}

// startJaeger runs a Jaeger of its own for the test, stopped when the
// test ends, and returns once its query API answers.
func startJaeger(t testing.TB) *jaeger {
	t.Helper()
	bin := toolBinary(t, filepath.Join("tools", "jaeger"), "jaeger", "github.com/jaegertracing/jaeger/cmd/jaeger")
	otlp, query, grpc := freeLoopbackAddr(t), freeLoopbackAddr(t), freeLoopbackAddr(t)
	// The configuration make bench-traces runs Jaeger with too.
	tmpl, err := os.ReadFile(filepath.Join("testdata", "jaeger.yaml"))
	require.NoError(t, err)
	cfg := strings.NewReplacer("QUERY_ADDR", query, "GRPC_ADDR", grpc, "OTLP_ADDR", otlp).Replace(string(tmpl))
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	j := &jaeger{OTLP: "http://" + otlp, query: "http://" + query, out: &logBuffer{}}
	cmd := exec.Command(bin, "--config", "file:"+path)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = j.out, j.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			require.Failf(t, "jaeger exited at start", "%v: %s", err, j.out.String())
		default:
		}
		if res, err := http.Get(j.query + "/api/services"); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return j
			}
		}
		require.True(t, time.Now().Before(deadline), "jaeger's query API did not answer within 60s: %s", j.out.String())
		time.Sleep(100 * time.Millisecond)
	}
}

// jaegerTrace is a trace as Jaeger's query API answers it.
type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	StartTime     int64  `json:"startTime"`
	Duration      int64  `json:"duration"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Logs []struct {
		Fields []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"fields"`
	} `json:"logs"`
}

// tag is the value of a span's tag, as text ("" when absent).
func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			b, _ := json.Marshal(t.Value)
			return strings.Trim(string(b), `"`)
		}
	}
	return ""
}

// parent is the id of the span's parent ("" for a root).
func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// service names the process that sent the span.
func (tr jaegerTrace) service(s jaegerSpan) string { return tr.Processes[s.ProcessID].ServiceName }

// named are the trace's spans of that name.
func (tr jaegerTrace) named(name string) []jaegerSpan {
	var out []jaegerSpan
	for _, s := range tr.Spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

// under reports whether span id descends from ancestor in the trace.
func (tr jaegerTrace) under(id, ancestor string) bool {
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	for seen := 0; seen <= len(tr.Spans); seen++ {
		s, ok := byID[id]
		if !ok {
			return false
		}
		if id = s.parent(); id == ancestor {
			return true
		}
	}
	return false
}

// text is everything the trace says, names and values, for a search.
func (tr jaegerTrace) text() string {
	b, _ := json.Marshal(tr)
	return string(b)
}

// trace waits until Jaeger holds trace id with the spans done accepts
// (spans arrive in batches, each process's on its own schedule), and
// returns it. It fails the test after 60 seconds, showing what it had.
func (j *jaeger) trace(t testing.TB, id string, done func(jaegerTrace) bool) jaegerTrace {
	t.Helper()
	return j.poll(t, "/api/traces/"+id, done)
}

// find waits until Jaeger holds a trace of service whose root span is
// named root, with the spans done accepts, and returns it.
func (j *jaeger) find(t testing.TB, service, root string, done func(jaegerTrace) bool) jaegerTrace {
	t.Helper()
	q := url.Values{"service": {service}, "operation": {root}, "lookback": {"1h"}, "limit": {"100"}}
	return j.poll(t, "/api/traces?"+q.Encode(), done)
}

// poll asks the query API every 100 ms for up to 60 s until one of the
// traces it answers satisfies done.
func (j *jaeger) poll(t testing.TB, path string, done func(jaegerTrace) bool) jaegerTrace {
	t.Helper()
	var last []jaegerTrace
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = j.get(t, path)
		for _, tr := range last {
			if done(tr) {
				return tr
			}
		}
	}
	require.Failf(t, "no such trace in jaeger", "%s within 60s; last answer: %+v", path, last)
	return jaegerTrace{}
}

// get reads traces from the query API (none while a trace is unknown).
func (j *jaeger) get(t testing.TB, path string) []jaegerTrace {
	res, err := http.Get(j.query + path)
	if err != nil {
		t.Errorf("jaeger query %s: %v", path, err)
		return nil
	}
	defer res.Body.Close()
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&body) != nil {
		return nil
	}
	return body.Data
}

// tree draws the trace as its spans nest, each with its duration, for
// the test's log (go test -v): the trace of each kind of request the
// operator guide shows.
func (tr jaegerTrace) tree() string {
	children := map[string][]jaegerSpan{}
	ids := map[string]bool{}
	for _, s := range tr.Spans {
		ids[s.SpanID] = true
	}
	var roots []jaegerSpan
	for _, s := range tr.Spans {
		if p := s.parent(); ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var draw func(s jaegerSpan, depth int)
	draw = func(s jaegerSpan, depth int) {
		fmt.Fprintf(&b, "%s%s (%s, %d µs)\n", strings.Repeat("  ", depth), s.OperationName, tr.service(s), s.Duration)
		kids := children[s.SpanID]
		sort.Slice(kids, func(i, j int) bool { return kids[i].StartTime < kids[j].StartTime })
		for _, k := range kids {
			draw(k, depth+1)
		}
	}
	for _, r := range roots {
		draw(r, 0)
	}
	return b.String()
}
