// Command hostile is the client side of make load-hostile
// (tests/load/hostile.sh): against one running serve on loopback it sends,
// at once, stalled chunked uploads (a few bytes, then nothing) and MCP
// JSON-RPC batches of walk_records calls without MCP-Protocol-Version,
// while it samples serve's RSS and times GET /health/live. Then it spends
// one more request per key to read what the rate limiter counted, scrapes
// the operator listener, prints a table and the number of requests it
// sent (for the script's audit check), and exits 1 when a bound was
// broken.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

type config struct {
	api, ops, uploadPath string
	pid                  int
	mcpKey               string
	uploadKeys           []string
	batches, calls       int
	uploads              int
	maxRSS               int64 // bytes
	maxHealth            time.Duration
	deadline             time.Duration
}

func main() {
	var c config
	var keysFile string
	flag.StringVar(&c.api, "api", "", "API base URL (loopback)")
	flag.StringVar(&c.ops, "ops", "", "operator listener base URL (metrics)")
	flag.IntVar(&c.pid, "pid", 0, "pid of serve, for its RSS")
	flag.StringVar(&c.mcpKey, "mcp-key", "", "key sending the MCP batches (a read key)")
	flag.StringVar(&keysFile, "upload-keys", "", "file of keys sending the uploads, one a line, used in turn")
	flag.StringVar(&c.uploadPath, "upload-path", "", "path and query of the upload")
	flag.IntVar(&c.batches, "batches", 4, "MCP batches sent at once")
	flag.IntVar(&c.calls, "calls", 1000, "walk_records calls per batch")
	flag.IntVar(&c.uploads, "uploads", 250, "stalled chunked uploads")
	maxRSS := flag.Int("max-rss-mb", 300, "RSS bound of serve, MB")
	flag.DurationVar(&c.maxHealth, "max-health", 50*time.Millisecond, "bound of one health answer")
	flag.DurationVar(&c.deadline, "deadline", 60*time.Second, "the whole run")
	flag.Parse()
	c.maxRSS = int64(*maxRSS) * 1000 * 1000
	b, err := os.ReadFile(keysFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
	c.uploadKeys = strings.Fields(string(b))
	if c.api == "" || c.pid == 0 || c.mcpKey == "" || len(c.uploadKeys) == 0 || c.uploadPath == "" {
		fmt.Fprintln(os.Stderr, "hostile: -api, -pid, -mcp-key, -upload-keys and -upload-path are required")
		os.Exit(2)
	}
	if !run(c) {
		os.Exit(1)
	}
}

type answer struct {
	status     int
	retryAfter bool
	took       time.Duration
	bytes      int
	err        error
}

func run(c config) bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second}

	// Samplers: RSS every 20 ms, health every 100 ms, until stopped.
	stop := make(chan struct{})
	var samplers sync.WaitGroup
	var rssMax, rssStart int64
	var rssSamples int
	rssStart = rss(c.pid)
	samplers.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rss(c.pid); v > rssMax {
				rssMax = v
			}
			rssSamples++
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	var health []time.Duration
	var healthBad int
	healthClient := &http.Client{Timeout: 5 * time.Second}
	probe := func() {
		t0 := time.Now()
		resp, err := healthClient.Get(c.api + "/health/live")
		d := time.Since(t0)
		if err != nil {
			healthBad++
			health = append(health, d)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			healthBad++
		}
		health = append(health, d)
	}
	probe() // opens the connection the probes reuse; not counted
	health, healthBad = nil, 0
	samplers.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			probe()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})

	// The uploads first: each sends its headers and one chunk of 5 bytes,
	// then nothing; all are open before the batches go.
	t0 := time.Now()
	uploads := make([]answer, c.uploads)
	perKey := map[string]int{}
	var sent sync.WaitGroup
	var all sync.WaitGroup
	digest := sha256.Sum256([]byte("hello, world"))
	for i := range uploads {
		key := c.uploadKeys[i%len(c.uploadKeys)]
		perKey[key]++
		sent.Add(1)
		all.Go(func() { uploads[i] = stalledUpload(ctx, c, key, digest, sent.Done) })
	}
	sent.Wait()

	batches := make([]answer, c.batches)
	body := batch(c.calls)
	for i := range batches {
		all.Go(func() { batches[i] = mcpBatch(ctx, client, c, body) })
	}
	all.Wait()
	elapsed := time.Since(t0)
	close(stop)
	samplers.Wait()

	// Budget: one more request per key; the limiter must have counted
	// every request the key sent before it, plus this one.
	perKey[c.mcpKey] += c.batches
	type budget struct{ sent, counted int }
	budgets := map[string]budget{}
	keys := append([]string{c.mcpKey}, c.uploadKeys...)
	after, cancelAfter := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAfter()
	for _, k := range keys {
		limit, remaining, err := rateLimit(after, client, c.api, k)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile: budget probe:", err)
			return false
		}
		budgets[k] = budget{sent: perKey[k] + 1, counted: limit - remaining}
	}
	metrics := scrape(after, client, c.ops)

	// Report.
	ok := true
	check := func(good bool) string {
		if good {
			return "ok"
		}
		ok = false
		return "FAIL"
	}
	fmt.Printf("%d stalled chunked uploads by %d keys and %d MCP batches of %d walk_records calls (no MCP-Protocol-Version), at once; done in %.1fs\n\n",
		c.uploads, len(c.uploadKeys), c.batches, c.calls, elapsed.Seconds())
	fmt.Printf("%-44s %-34s %s\n", "measure", "value", "check")
	fmt.Printf("%-44s %-34s %s\n", "serve RSS before / peak", fmt.Sprintf("%.0f MB / %.0f MB (%d samples)", mb(rssStart), mb(rssMax), rssSamples),
		check(rssMax > 0 && rssMax < c.maxRSS)+fmt.Sprintf(" (< %.0f MB)", mb(c.maxRSS)))
	sort.Slice(health, func(i, j int) bool { return health[i] < health[j] })
	var hmax, hmed time.Duration
	if len(health) > 0 {
		hmax, hmed = health[len(health)-1], health[len(health)/2]
	}
	fmt.Printf("%-44s %-34s %s\n", "GET /health/live: probes, median / max", fmt.Sprintf("%d, %.1f ms / %.1f ms", len(health), ms(hmed), ms(hmax)),
		check(len(health) > 0 && healthBad == 0 && hmax < c.maxHealth)+fmt.Sprintf(" (< %.0f ms, all 200)", ms(c.maxHealth)))
	for _, row := range tally(uploads) {
		fmt.Printf("%-44s %-34s %s\n", "uploads answered "+row.label, row.value, "")
	}
	badUpload := 0
	for _, u := range uploads {
		if !(u.status == 429 || u.status == 503) || !u.retryAfter {
			if u.status != 400 {
				badUpload++
			}
		}
	}
	fmt.Printf("%-44s %-34s %s\n", "uploads answered otherwise", strconv.Itoa(badUpload), check(badUpload == 0)+" (429/503 with Retry-After, or 400 cut idle)")
	badBatch := 0
	for _, row := range tally(batches) {
		fmt.Printf("%-44s %-34s %s\n", "MCP batches answered "+row.label, row.value, "")
	}
	for _, b := range batches {
		if b.status != 400 {
			badBatch++
		}
	}
	fmt.Printf("%-44s %-34s %s\n", "MCP batches not answered 400", strconv.Itoa(badBatch), check(badBatch == 0))
	sentAll, countedAll, wrong := 0, 0, 0
	for _, k := range keys {
		b := budgets[k]
		sentAll += b.sent
		countedAll += b.counted
		if b.sent != b.counted {
			wrong++
		}
	}
	fmt.Printf("%-44s %-34s %s\n", "rate-limit budget spent / requests sent", fmt.Sprintf("%d / %d (%d keys, %d differ)", countedAll, sentAll, len(keys), wrong),
		check(wrong == 0))
	if metrics != nil {
		fmt.Printf("%-44s %-34s %s\n", "foodsafe_http_requests_total, /mcp + uploads", fmt.Sprintf("%.0f / %d", metrics["served"], c.batches+c.uploads), check(int(metrics["served"]) == c.batches+c.uploads))
		fmt.Printf("%-44s %-34s %s\n", "foodsafe_ratelimit_limited_total", fmt.Sprintf("%.0f", metrics["limited"]), check(metrics["limited"] == 0))
	}
	// The script compares the audit trail with this line.
	fmt.Printf("\nrequests-sent %d\n", sentAll)
	return ok
}

// stalledUpload writes a chunked PUT with one 5-byte chunk on a raw
// connection, calls sent, and waits for the answer without sending more.
func stalledUpload(ctx context.Context, c config, key string, digest [32]byte, sent func()) answer {
	once := sync.OnceFunc(sent)
	defer once()
	t0 := time.Now()
	host := strings.TrimPrefix(c.api, "http://")
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return answer{err: err}
	}
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	head := fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: image/png\r\n"+
		"Repr-Digest: sha-256=:%s:\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
		c.uploadPath, host, key, base64.StdEncoding.EncodeToString(digest[:]))
	if _, err := io.WriteString(conn, head); err != nil {
		return answer{err: err}
	}
	once()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return answer{err: err, took: time.Since(t0)}
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After") != "", took: time.Since(t0), bytes: int(n)}
}

// batch is a JSON-RPC batch of n walk_records calls of 100 records.
func batch(n int) []byte {
	calls := make([]map[string]any, n)
	for i := range calls {
		calls[i] = map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": map[string]any{
			"name": "walk_records", "arguments": map[string]any{"restaurantId": "demo-bistro", "collection": "temperature-records", "limit": 100}}}
	}
	b, _ := json.Marshal(calls)
	return b
}

func mcpBatch(ctx context.Context, client *http.Client, c config, body []byte) answer {
	t0 := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/mcp", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.mcpKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err, took: time.Since(t0)}
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After") != "", took: time.Since(t0), bytes: int(n)}
}

// rateLimit spends one request of key and reads the limiter's headers.
func rateLimit(ctx context.Context, client *http.Client, api, key string) (limit, remaining int, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/v1/restaurants", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	limit, err1 := strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("answer %d without rate-limit headers", resp.StatusCode)
	}
	return limit, remaining, nil
}

// scrape sums the requests served on /mcp and the upload route, and the
// requests the limiter refused; nil without an operator listener.
func scrape(ctx context.Context, client *http.Client, ops string) map[string]float64 {
	if ops == "" {
		return nil
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ops+"/metrics", nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "foodsafe_http_requests_total{") &&
			(strings.Contains(line, `route="/mcp"`) || strings.Contains(line, `/asset"`)):
			out["served"] += v
		case strings.HasPrefix(line, "foodsafe_ratelimit_limited_total{"):
			out["limited"] += v
		}
	}
	return out
}

type row struct{ label, value string }

// tally groups answers by status and Retry-After, with the time range.
func tally(as []answer) []row {
	type group struct {
		n, bytes int
		min, max time.Duration
	}
	groups := map[string]*group{}
	for _, a := range as {
		label := strconv.Itoa(a.status)
		if a.err != nil {
			label = "error (" + a.err.Error() + ")"
			if len(label) > 40 {
				label = label[:40] + "…)"
			}
		} else if a.retryAfter {
			label += " + Retry-After"
		}
		g := groups[label]
		if g == nil {
			g = &group{min: a.took}
			groups[label] = g
		}
		g.n++
		g.bytes = max(g.bytes, a.bytes)
		g.min, g.max = min(g.min, a.took), max(g.max, a.took)
	}
	var out []row
	for label, g := range groups {
		out = append(out, row{label, fmt.Sprintf("%d, in %.2f–%.2f s, body ≤ %d B", g.n, g.min.Seconds(), g.max.Seconds(), g.bytes)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].label < out[j].label })
	return out
}

// rss reads VmRSS of pid, in bytes (0 when it cannot).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func mb(b int64) float64         { return float64(b) / 1e6 }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
