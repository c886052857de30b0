package tests

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// traceparent is a sampled W3C traceparent of a new trace, with the trace
// and parent span ids it carries.
func traceparent(t testing.TB) (header, traceID, parentID string) {
	b := make([]byte, 24)
	_, err := rand.Read(b)
	require.NoError(t, err)
	traceID, parentID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + parentID + "-01", traceID, parentID
}

// sqlcName is how a statement's span is named: its sqlc query name,
// noun first (RecordWalkPage, KeyAuthLookup).
var sqlcName = regexp.MustCompile(`^[A-Z][a-z]+[A-Za-z]*$`)

// notStatement are the database spans that are not a statement of sql/
// (the pool, a connection, a transaction's bounds).
var notStatement = map[string]bool{"pool.acquire": true, "connect": true, "BEGIN": true, "COMMIT": true, "ROLLBACK": true}

// `foodsafe serve` configured by the standard OTEL_* variables sends its
// traces to a real collector (Jaeger, built from the module proxy): a walk
// page, an ingest, an upload to S3 and an MCP tool call, each sent with a
// traceparent of its own, arrive in the caller's trace as a server span
// named by the route template, with the request id the answer carried,
// the statements under it named by their sqlc names (db.system.name
// postgresql), and no secret anywhere; the access log line of each
// carries the same trace and span ids. A key pasted into a path is
// redacted from the span's url.path as from the logs. Maintenance runs
// and a foodsafe-sync run are traces of their own, the run's requests
// joining the server's spans to it.
func TestTracesReachACollector(t *testing.T) {
	t.Parallel()
	j := startJaeger(t)
	a := newApp(t, withS3(sharedS3(t)))
	a.addRestaurants("r1")
	service := "foodsafe-" + strings.ToLower(rand.Text()[:8])
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP, "OTEL_BSP_SCHEDULE_DELAY=100"}
	p := startServe(t, append([]string{"DATABASE_URL=" + a.cfg.DatabaseURL, "FOODSAFE_BLOB_URL=" + a.cfg.BlobURL,
		"FOODSAFE_CURSOR_KEY=" + rand.Text() + rand.Text(), "OTEL_SERVICE_NAME=" + service,
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test"}, otel...)...)
	r := a.replica(p)
	key := a.newKey(grant("r1", "areas:write", "areas:read", "drive-files:write", "drive-files:read"))
	secret := key[strings.Index(key, ".")+1:]
	for i := range 3 {
		r.put(key, "r1", "areas", "area-"+string(rune('a'+i)), "m-area-"+string(rune('a'+i)), area("Kitchen"))
	}
	r.put(key, "r1", "drive-files", "f1", "m-f1", map[string]any{"s3Key": "k", "name": "plan.pdf", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "plan.pdf", "status": "pending"}})
	pdf := []byte("%PDF-1.7 " + strings.Repeat("haccp plan ", 200))

	for _, c := range []struct {
		name, route string
		send        func(tp string) response
		// statement is a statement (by name prefix) the trace must hold
		// under the server span.
		statement string
	}{
		{"walk page", "GET /v1/restaurants/{restaurantId}/collections/{collection}/records",
			func(tp string) response {
				return r.get(recordsPath("r1", "areas")+"?limit=2", "Authorization", "Bearer "+key, "Traceparent", tp)
			}, "RecordWalk"},
		{"ingest", "PUT /v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/mutations/{mutationId}",
			func(tp string) response {
				return r.putJSON(key, ingestPath("r1", "areas", "area-z", "m-area-z"),
					snapshot("r1", "area-z", "m-area-z", 1_700_000_000_000, false, area("Store")),
					"Idempotency-Key", "m-area-z", "Traceparent", tp)
			}, "Record"},
		{"upload", "PUT /v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/asset",
			func(tp string) response {
				u := uploadReq(key, assetPath("r1", "drive-files", "f1", "plan.pdf"), "application/pdf", digestHeader(pdf), pdf)
				u.Header["Traceparent"] = tp
				return r.do(u)
			}, "Asset"},
		{"MCP tool call", "POST /mcp",
			func(tp string) response {
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"walk_records",` +
					`"arguments":{"restaurantId":"r1","collection":"areas","limit":2},"_meta":{` +
					`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
				return r.do(req{Method: http.MethodPost, Path: "/mcp", Body: strings.NewReader(body), Header: map[string]string{
					"Authorization": "Bearer " + key, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
					"MCP-Protocol-Version": rev2026, "Mcp-Method": "tools/call", "Mcp-Name": "walk_records", "Traceparent": tp}})
			}, "RecordWalk"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, traceID, parentID := traceparent(t)
			res := c.send(tp)
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
			tr := j.trace(t, traceID, func(tr jaegerTrace) bool {
				servers := tr.named(c.route)
				if len(servers) != 1 {
					return false
				}
				for _, s := range tr.Spans {
					if strings.HasPrefix(s.OperationName, c.statement) && tr.under(s.SpanID, servers[0].SpanID) {
						return true
					}
				}
				return false
			})
			t.Logf("the trace of a %s:\n%s", c.name, tr.tree())
			server := tr.named(c.route)[0]
			require.Equal(t, service, tr.service(server))
			require.Equal(t, parentID, server.parent(), "the server span continues the caller's span")
			require.Equal(t, "server", server.tag("span.kind"))
			require.Equal(t, strings.SplitN(c.route, " ", 2)[1], server.tag("http.route"))
			require.Equal(t, "200", server.tag("http.response.status_code"))
			require.Equal(t, res.Header.Get("X-Request-ID"), server.tag("foodsafe.request.id"), "the answer's request id finds the trace")
			require.Equal(t, key[len("fsk_"):strings.Index(key, ".")], server.tag("foodsafe.key.id"))
			var statements int
			for _, s := range tr.Spans {
				require.Equal(t, traceID, s.TraceID)
				if s.tag("db.system.name") != "postgresql" || notStatement[s.OperationName] ||
					strings.HasPrefix(s.OperationName, "prepare ") || strings.HasPrefix(s.OperationName, "pipeline ") {
					continue
				}
				require.True(t, tr.under(s.SpanID, server.SpanID), "%s is under the server span", s.OperationName)
				require.Regexp(t, sqlcName, s.OperationName, "a statement is named by its sqlc name")
				require.NotEmpty(t, s.tag("db.query.text"))
				require.Empty(t, s.tag("pgx.query.parameters"), "no bound values")
				statements++
			}
			require.Positive(t, statements)
			require.Len(t, tr.named("authenticate"), 1)
			require.NotEmpty(t, tr.named("rate limit"))
			require.NotContains(t, tr.text(), secret, "no secret in any span")
			switch c.name {
			case "upload":
				require.NotEmpty(t, tr.named("S3.Put"), "the object store's call")
				require.NotEmpty(t, tr.named("S3.PutObject"), "the object store's HTTP request")
			case "MCP tool call":
				require.Equal(t, "walk_records", server.tag("gen_ai.tool.name"))
				require.Equal(t, "tools/call", server.tag("mcp.method.name"))
				require.Len(t, tr.named("tools/call walk_records"), 1)
			}
			if c.name != "upload" {
				w := tr.named("write answer")
				require.Len(t, w, 1)
				require.Equal(t, server.SpanID, w[0].parent())
				require.Equal(t, server.tag("http.response.body.size"), w[0].tag("http.response.body.size"))
			}
			line := requestLogLine(t, p.logs.String(), res.Header.Get("X-Request-ID"))
			require.Equal(t, traceID, line["trace_id"], "the log line carries the trace id")
			require.Equal(t, server.SpanID, line["span_id"], "and the server span's id")
		})
	}

	t.Run("a key pasted into a path is redacted from the span", func(t *testing.T) {
		tp, traceID, _ := traceparent(t)
		res := r.get("/v1/restaurants/"+key+"/collections", "Authorization", "Bearer "+key, "Traceparent", tp)
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Body)
		tr := j.trace(t, traceID, func(tr jaegerTrace) bool {
			return len(tr.named("GET /v1/restaurants/{restaurantId}/collections")) == 1
		})
		server := tr.named("GET /v1/restaurants/{restaurantId}/collections")[0]
		require.Contains(t, server.tag("url.path"), "[redacted]")
		require.NotContains(t, tr.text(), secret)
	})

	t.Run("maintenance runs are traces of their own", func(t *testing.T) {
		// serve ran every job once as it started.
		tr := j.find(t, service, "maintain change-compaction", func(tr jaegerTrace) bool {
			return len(tr.named("JobLockTry")) > 0
		})
		t.Logf("the trace of a compaction:\n%s", tr.tree())
		root := tr.named("maintain change-compaction")[0]
		require.Empty(t, root.parent())
		require.Equal(t, "true", root.tag("foodsafe.job.ran"))
		require.True(t, tr.under(tr.named("JobLockTry")[0].SpanID, root.SpanID))
	})

	t.Run("a sync run is a trace joining the server's spans", func(t *testing.T) {
		syncService := service + "-sync"
		cmd := syncCmd(t, key, "--api", p.URL, "--to", sqliteTarget(t), "--restaurant", "r1", "--collections", "areas", "--json")
		cmd.Env = append(cmd.Env, append([]string{"OTEL_SERVICE_NAME=" + syncService}, otel...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		tr := j.find(t, syncService, "sync run", func(tr jaegerTrace) bool {
			for _, s := range tr.Spans {
				if tr.service(s) == service && strings.HasPrefix(s.OperationName, "GET /v1/restaurants/{restaurantId}/collections/{collection}/records") {
					return true
				}
			}
			return false
		})
		t.Logf("the trace of a sync run:\n%s", tr.tree())
		run := tr.named("sync run")[0]
		for _, s := range tr.Spans {
			if tr.service(s) == service && s.tag("span.kind") == "server" {
				require.True(t, tr.under(s.SpanID, run.SpanID), "%s is part of the run", s.OperationName)
			}
		}
		require.NotContains(t, tr.text(), secret)
	})
}

// requestLogLine is the access log line of the request with that id.
func requestLogLine(t testing.TB, logs, requestID string) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l["msg"] == "request" && l["request_id"] == requestID {
			return l
		}
	}
	require.Failf(t, "no access log line", "request %s in:\n%s", requestID, logs)
	return nil
}

// A tracing setting serve cannot honour stops it at start, naming the
// variable, rather than tracing otherwise than the operator asked.
func TestServeRefusesTracingItCannotHonour(t *testing.T) {
	t.Parallel()
	for variable, env := range map[string][]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": {"OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		"OTEL_TRACES_SAMPLER":         {"OTEL_TRACES_SAMPLER=sometimes"},
		"OTEL_TRACES_EXPORTER":        {"OTEL_TRACES_EXPORTER=console"},
	} {
		code, out := runServe(t, append([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}, env...)...)
		require.Equal(t, 1, code, "%s", out)
		require.Contains(t, out, variable)
	}
}
