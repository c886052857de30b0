package tests

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// bearerOnly adds the credential and nothing else (no contract check: the
// benchmark measures the service, not the test harness).
type bearerOnly struct {
	key  string
	base http.RoundTripper
}

func (b bearerOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// pager fetches the next page of a walk that restarts when it ends, over
// one face of the API.
type pager func(cursor string) (next string, records int, err error)

func restPager(a *app, key string, limit int) pager {
	client := &http.Client{Transport: bearerOnly{key, a.srv.Client().Transport}}
	base := a.srv.URL + recordsPath("r1", "areas") + "?limit=" + strconv.Itoa(limit)
	return func(cursor string) (string, int, error) {
		u := base
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		res, err := client.Get(u)
		if err != nil {
			return "", 0, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			return "", 0, errStatus(res.StatusCode, body, err)
		}
		var p walkPage
		if err := json.Unmarshal(body, &p); err != nil {
			return "", 0, err
		}
		if p.NextCursor == nil {
			return "", len(p.Data), nil
		}
		return *p.NextCursor, len(p.Data), nil
	}
}

func mcpPager(a *app, key string, limit int) (pager, func(), error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: a.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerOnly{key, a.srv.Client().Transport}}}, nil)
	if err != nil {
		return nil, nil, err
	}
	return func(cursor string) (string, int, error) {
		args := map[string]any{"restaurantId": "r1", "collection": "areas", "limit": limit}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "walk_records", Arguments: args})
		if err != nil {
			return "", 0, err
		}
		if res.IsError {
			return "", 0, errStatus(200, []byte(res.Content[0].(*mcp.TextContent).Text), nil)
		}
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return "", 0, err
		}
		var p walkPage
		if err := json.Unmarshal(b, &p); err != nil {
			return "", 0, err
		}
		if p.NextCursor == nil {
			return "", len(p.Data), nil
		}
		return *p.NextCursor, len(p.Data), nil
	}, func() { _ = cs.Close() }, nil
}

type statusErr struct {
	status int
	body   string
}

func (e statusErr) Error() string { return strconv.Itoa(e.status) + ": " + e.body }

func errStatus(status int, body []byte, err error) error {
	if err != nil {
		return err
	}
	return statusErr{status, string(body)}
}

// BenchmarkMCPWalk compares a walk page over MCP (walk_records through the
// go-sdk client, protocol 2026-07-28) with the same page over REST, in the
// same run against the same 100,000-record collection (ANALYZEd): one
// client in sequence, 8 clients at once, and, for MCP, a client that
// connects for each page (the handshake a one-question assistant pays).
// Every request authenticates against PostgreSQL and is audited.
func BenchmarkMCPWalk(b *testing.B) {
	const n, limit = 100_000, 20
	dbURL := testdb.URL(b)
	seedRecordsSQL(b, dbURL, "r1", "areas", n)
	a := newApp(b, withDatabaseURL(dbURL), withRateLimit(1_000_000_000))
	key := a.newKey(grant("r1", "areas:read"))

	faces := []struct {
		name, unit string
		open       func() (pager, func(), error)
	}{
		{"rest", "req/s", func() (pager, func(), error) { return restPager(a, key, limit), func() {}, nil }},
		{"mcp", "pages/s", func() (pager, func(), error) { return mcpPager(a, key, limit) }},
	}
	for _, f := range faces {
		b.Run(f.name+"/sequential", func(b *testing.B) {
			next, done, err := f.open()
			require.NoError(b, err)
			defer done()
			cursor := ""
			start := time.Now()
			for b.Loop() {
				c, got, err := next(cursor)
				if err != nil || got == 0 {
					b.Fatalf("page: %d records, %v", got, err)
				}
				cursor = c
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), f.unit)
		})
		b.Run(f.name+"/clients=8", func(b *testing.B) {
			b.SetParallelism(4) // 4 x GOMAXPROCS(2)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				next, done, err := f.open()
				if err != nil {
					b.Error(err)
					return
				}
				defer done()
				cursor := ""
				for pb.Next() {
					c, got, err := next(cursor)
					if err != nil || got == 0 {
						b.Errorf("page: %d records, %v", got, err)
						return
					}
					cursor = c
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), f.unit)
		})
	}
	b.Run("mcp/connect-per-page", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			next, done, err := mcpPager(a, key, limit)
			if err != nil {
				b.Fatal(err)
			}
			if _, got, err := next(""); err != nil || got != limit {
				b.Fatalf("page: %d records, %v", got, err)
			}
			done()
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
	})
}
