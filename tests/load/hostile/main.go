// Command hostile is the client side of make load-hostile
// (tests/load/hostile.sh): against one running serve on loopback it runs
// one attack after another, each a phase measured alike: serve's peak
// RSS (sampled every 20 ms), GET /health/live timed every 100 ms, and
// the database round trips serve made (its pool's acquisitions, from the
// operator listener: each statement or transaction takes one). The
// attacks:
//
//   - uploads: stalled chunked uploads (a few bytes, then nothing) and
//     MCP JSON-RPC batches of walk_records calls, at once;
//   - download: a file of blocks that look like net/http's own error
//     answers, ending in a whole HTTP response, downloaded, then a second
//     request on the same connection; 299 one-byte ranges of it;
//   - version flood: 16 connections flooding /health/version while a
//     partner reads walk pages of 100, against the partner's quiet
//     latency; the flood comes from a process of its own at nice 19,
//     since on loopback its client would share serve's two cores where a
//     remote attacker's does not;
//   - bodies: 60 hostile 1 MiB JSON bodies at once (REST and MCP);
//   - slow bodies: 50 requests with an unknown key whose bodies trickle;
//   - random keys: an address spends its budget, then sends 400 random keys;
//   - framing: a request with both Content-Length and Transfer-Encoding;
//   - idle: one GET /health/live then silence, from the start of the run;
//   - ipv6: unknown keys from random addresses of one IPv6 /64, through a
//     proxy serve trusts (127.0.0.9, X-Forwarded-For);
//   - addresses: requests without a key from 2,000 IPv4 addresses
//     through that proxy (each would be an audit_counts row of its own);
//   - connections: one address opens FOODSAFE_MAX_CONNECTIONS
//     connections and keeps them, while another opens new ones;
//   - refused bodies: 40 clients send a 2 MiB body whole, then read the
//     413 (as Python's http.client does);
//   - trickle: 8 keys x 4 uploads sending a byte every 20 s hold every
//     upload slot, while another device tries its upload every second;
//   - quota: one key uploads 8 distinct files of 10 MiB against a quota
//     of 50 MiB a day.
//
// The last four are measured with a partner reading walk pages beside
// them (its p50 and p99, against its quiet latency). Each phase comes
// from a loopback address of its own (127.0.0.N), so the per-IP budgets
// of one attack do not touch another. It prints a
// table, the requests the keys of the uploads phase sent (for the
// script's audit check) and exits 1 when a bound was broken.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type config struct {
	api, ops, uploadPath string
	pid                  int
	mcpKey, batchKey     string
	writerKey            string
	uploadKeys           []string
	batches, calls       int
	uploads              int
	maxRSS               int64 // bytes
	maxHealth            time.Duration
	deadline             time.Duration
	idleWait             time.Duration
	floodPath            string
	only                 string
	partnerKey           string
	maxConns             int
	trickleKeys          []string
	quotaKey             string
	// bigKey writes and reads the pages attack's users records.
	bigKey string
}

func main() {
	var c config
	var keysFile string
	flag.StringVar(&c.api, "api", "", "API base URL (loopback)")
	flag.StringVar(&c.ops, "ops", "", "operator listener base URL (metrics)")
	flag.IntVar(&c.pid, "pid", 0, "pid of serve, for its RSS")
	flag.StringVar(&c.mcpKey, "mcp-key", "", "a key reading the demo restaurant: the partner of the version flood")
	flag.StringVar(&c.batchKey, "batch-key", "", "key sending the MCP batches (a read key)")
	flag.StringVar(&c.writerKey, "writer-key", "", "key holding drive-files:write, drive-files:read and areas:write")
	flag.StringVar(&keysFile, "upload-keys", "", "file of keys sending the uploads, one a line, used in turn")
	flag.StringVar(&c.uploadPath, "upload-path", "", "path and query of the upload")
	flag.IntVar(&c.batches, "batches", 4, "MCP batches sent at once")
	flag.IntVar(&c.calls, "calls", 1000, "walk_records calls per batch")
	flag.IntVar(&c.uploads, "uploads", 250, "stalled chunked uploads")
	maxRSS := flag.Int("max-rss-mb", 300, "RSS bound of serve, MB")
	flag.DurationVar(&c.maxHealth, "max-health", 50*time.Millisecond, "bound of one health answer in the uploads phase")
	flag.DurationVar(&c.deadline, "deadline", 60*time.Second, "each phase")
	flag.DurationVar(&c.idleWait, "idle-wait", 45*time.Second, "how long the idle connection is watched")
	flag.StringVar(&c.floodPath, "flood-path", "/health/version", "the path the version flood sends")
	flag.StringVar(&c.only, "only", "", "run only the phases whose name contains this word")
	flag.StringVar(&c.partnerKey, "partner-key", "", "a key reading the demo restaurant's temperature records: the partner beside the last attacks")
	flag.StringVar(&c.bigKey, "big-key", "", "a key holding users:write and users:read on the demo restaurant: the pages attack")
	flag.IntVar(&c.maxConns, "max-connections", 4096, "serve's FOODSAFE_MAX_CONNECTIONS: what the connections attack opens")
	trickleFile := flag.String("trickle-keys", "", "file of keys trickling uploads (cleaning-task-pictures:write), one a line, 4 uploads each")
	flag.StringVar(&c.quotaKey, "quota-key", "", "key holding drive-files:write that uploads past its daily quota")
	floodChild := flag.String("flood-child", "", "(internal) flood this URL from 16 connections until stdin closes")
	flag.Parse()
	if *floodChild != "" {
		floodUntilStdinCloses(*floodChild)
		return
	}
	c.maxRSS = int64(*maxRSS) * 1000 * 1000
	b, err := os.ReadFile(keysFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(2)
	}
	c.uploadKeys = strings.Fields(string(b))
	if *trickleFile != "" {
		tb, err := os.ReadFile(*trickleFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile:", err)
			os.Exit(2)
		}
		c.trickleKeys = strings.Fields(string(tb))
	}
	if c.api == "" || c.pid == 0 || c.mcpKey == "" || c.batchKey == "" || c.writerKey == "" || len(c.uploadKeys) == 0 || c.uploadPath == "" ||
		c.partnerKey == "" || c.bigKey == "" {
		fmt.Fprintln(os.Stderr, "hostile: -api, -pid, -mcp-key, -batch-key, -writer-key, -partner-key, -big-key, -upload-keys and -upload-path are required")
		os.Exit(2)
	}
	if !run(c) {
		os.Exit(1)
	}
}

// from is a client whose connections come from 127.0.0.n.
func from(n int, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64,
		DisableCompression: true}}
}

// dialFrom opens a raw connection from 127.0.0.n.
func dialFrom(ctx context.Context, n int, host string) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}}
	return d.DialContext(ctx, "tcp", host)
}

// phase measures one attack: serve's RSS, /health/live's latency and the
// database round trips serve made while it ran.
type phase struct {
	name     string
	rssStart int64
	rssMax   int64
	samples  int
	health   []time.Duration
	bad      int
	acquired float64
	checks   []string
	ok       bool
	// memory: the attack is on serve's memory; its RSS bound is checked.
	memory bool
	// maxRSS, when set, is the phase's own RSS bound instead of -max-rss-mb.
	maxRSS int64
	// partner: a partner's walk page reads beside the attack (withPartner).
	partner *partner
	stop    chan struct{}
	wg      sync.WaitGroup
}

func (c config) start(name string) *phase {
	p := &phase{name: name, rssStart: rss(c.pid), stop: make(chan struct{}), ok: true}
	p.acquired = -c.acquisitions()
	p.wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rss(c.pid); v > p.rssMax {
				p.rssMax = v
			}
			p.samples++
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	client := from(1, 5*time.Second)
	probe := func() (time.Duration, bool) {
		t0 := time.Now()
		resp, err := client.Get(c.api + "/health/live")
		d := time.Since(t0)
		if err != nil {
			return d, false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return d, resp.StatusCode == http.StatusOK
	}
	probe() // opens the connection the probes reuse; not counted
	p.wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			d, good := probe()
			p.health = append(p.health, d)
			if !good {
				p.bad++
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
	return p
}

// check records one bound of the phase.
func (p *phase) check(good bool, format string, args ...any) {
	mark := "ok"
	if !good {
		mark, p.ok = "FAIL", false
	}
	p.checks = append(p.checks, fmt.Sprintf("%-4s %s", mark, fmt.Sprintf(format, args...)))
}

// end stops the samplers and prints the phase.
func (c config) end(p *phase) bool {
	close(p.stop)
	p.wg.Wait()
	p.acquired += c.acquisitions()
	if p.partner != nil {
		p.partner.report(p)
	}
	sort.Slice(p.health, func(i, j int) bool { return p.health[i] < p.health[j] })
	var hmed, hmax time.Duration
	if n := len(p.health); n > 0 {
		hmed, hmax = p.health[n/2], p.health[n-1]
	}
	fmt.Printf("\n== %s\n", p.name)
	fmt.Printf("   RSS %.0f MB before, %.0f MB peak (%d samples); /health/live %d probes, median %.1f ms, max %.1f ms, %d failed; "+
		"database round trips %.0f\n", mb(p.rssStart), mb(p.rssMax), p.samples, len(p.health), ms(hmed), ms(hmax), p.bad, p.acquired)
	if p.memory {
		bound := c.maxRSS
		if p.maxRSS > 0 {
			bound = p.maxRSS
		}
		p.check(p.rssMax > 0 && p.rssMax < bound, "serve's RSS stays under %.0f MB", mb(bound))
	}
	p.check(p.bad == 0, "every /health/live answered 200")
	for _, l := range p.checks {
		fmt.Println("   " + l)
	}
	partnerP99 := "-"
	if p.partner != nil {
		partnerP99 = fmt.Sprintf("%.1f", ms(p.partner.p99))
	}
	fmt.Printf("phase %s: rss_peak_mb=%.0f health_median_ms=%.1f health_max_ms=%.1f db_round_trips=%.0f partner_p99_ms=%s ok=%v\n",
		strings.ReplaceAll(p.name, " ", "-"), mb(p.rssMax), ms(hmed), ms(hmax), p.acquired, partnerP99, p.ok)
	return p.ok
}

func run(c config) bool {
	ok := true
	idle := make(chan string, 1)
	go func() { idle <- c.idleConnection() }()
	q50, q99 := c.quietPartner()
	fmt.Printf("partner quiet: walk page p50 %.1f ms, p99 %.1f ms\n", ms(q50), ms(q99))
	for _, ph := range []struct {
		name string
		run  func() bool
	}{{"uploads", c.uploadsAndBatches}, {"download", c.download}, {"version", c.versionFlood}, {"bodies", c.bodies},
		{"slow", c.slowBodies}, {"keys", c.randomKeys}, {"framing", c.framing}, {"ipv6", c.ipv6Prefix},
		{"addresses", c.manyAddresses}, {"connections", c.oneAddressConnections}, {"refused", c.refusedBodies},
		{"trickle", c.trickleAttack}, {"quota", c.quotaAttack}, {"pages", c.pages}} {
		if c.only != "" && !strings.Contains(ph.name, c.only) {
			continue
		}
		if (ph.name == "trickle" && len(c.trickleKeys) == 0) || (ph.name == "quota" && c.quotaKey == "") {
			continue // an older hostile.sh: no keys for it
		}
		if !ph.run() {
			ok = false
		}
	}
	if c.only != "" && !strings.Contains("idle", c.only) {
		return ok
	}
	p := c.start("idle connection")
	res := <-idle
	p.check(strings.HasPrefix(res, "closed"), "one GET /health/live then silence: %s", res)
	if !c.end(p) {
		ok = false
	}
	return ok
}

type answer struct {
	status     int
	retryAfter bool
	took       time.Duration
	bytes      int
	err        error
}

// uploadsAndBatches: stalled chunked uploads, then MCP batches, at once;
// every key's budget counted every request.
func (c config) uploadsAndBatches() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := from(1, 30*time.Second)
	p := c.start(fmt.Sprintf("uploads: %d stalled chunked uploads by %d keys and %d MCP batches of %d walk_records calls",
		c.uploads, len(c.uploadKeys), c.batches, c.calls))
	p.memory = true
	t0 := time.Now()
	uploads := make([]answer, c.uploads)
	perKey := map[string]int{}
	var sent, all sync.WaitGroup
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
	perKey[c.batchKey] += c.batches
	keys := append([]string{c.batchKey}, c.uploadKeys...)
	sentAll, countedAll, wrong := 0, 0, 0
	for _, k := range keys {
		limit, remaining, err := rateLimit(ctx, client, c.api, k)
		if err != nil {
			p.check(false, "budget probe: %v", err)
			continue
		}
		sentAll += perKey[k] + 1
		countedAll += limit - remaining
		if perKey[k]+1 != limit-remaining {
			wrong++
		}
	}
	for _, row := range tally(uploads) {
		p.checks = append(p.checks, "     uploads answered "+row.label+": "+row.value)
	}
	for _, row := range tally(batches) {
		p.checks = append(p.checks, "     MCP batches answered "+row.label+": "+row.value)
	}
	badUpload, badBatch := 0, 0
	for _, u := range uploads {
		if !((u.status == 429 || u.status == 503) && u.retryAfter) && u.status != 408 {
			badUpload++
		}
	}
	for _, b := range batches {
		if b.status != 400 {
			badBatch++
		}
	}
	p.check(badUpload == 0, "every upload answered 429/503 with Retry-After, or cut idle (408): %d otherwise; done in %.1f s", badUpload, elapsed.Seconds())
	p.check(badBatch == 0, "every MCP batch answered 400: %d otherwise", badBatch)
	p.check(wrong == 0, "rate-limit budget spent %d of %d requests sent (%d keys, %d differ)", countedAll, sentAll, len(keys), wrong)
	sort.Slice(p.health, func(i, j int) bool { return p.health[i] < p.health[j] })
	if n := len(p.health); n > 0 {
		p.check(p.health[n-1] < c.maxHealth, "every /health/live within %.0f ms", ms(c.maxHealth))
	}
	good := c.end(p)
	// The script compares the audit trail with these lines.
	pubs := make([]string, len(keys))
	for i, k := range keys {
		pubs[i] = strings.TrimPrefix(strings.SplitN(k, ".", 2)[0], "fsk_")
	}
	fmt.Printf("requests-sent %d\naudit-keys %s\n", sentAll, strings.Join(pubs, ","))
	return good
}

// hostileFile is 1 MiB of blocks that begin like net/http's own error
// answer, one every 512 bytes, ending in a whole HTTP response.
func hostileFile() []byte {
	const canned = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	block := canned + strings.Repeat(".", 512-len(canned))
	tail := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"status\":\"evil\"}"
	return []byte(strings.Repeat(block, (1<<20)/512-1) + tail + strings.Repeat("\r\n", (512-len(tail))/2))
}

// download: the hostile file downloads byte for byte, the next request on
// its connection gets serve's own answer, and 299 one-byte ranges of a
// 600-byte file answer no more than the file.
func (c config) download() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	p := c.start("download: 1 MiB of blocks that look like net/http's own answers, and 299 ranges")
	fail := func(err error) bool {
		p.check(false, "%v", err)
		return c.end(p)
	}
	id := "hostile-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	file := hostileFile()
	u, err := c.uploadFile(ctx, client, id, file)
	if err != nil {
		return fail(err)
	}
	get := func(rawURL string, hdr ...string) ([]byte, int, bool, error) {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, rawURL, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			return nil, 0, reused, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return b, res.StatusCode, reused, err
	}
	got, status, _, err := get(u)
	if err != nil {
		return fail(err)
	}
	p.check(status == 200 && bytes.Equal(got, file), "the download is the file, byte for byte (%d: %d bytes back, %d differ)", status, len(got), differing(got, file))
	next, status, reused, err := get(c.api + "/health/live")
	p.check(err == nil && reused && status == 200 && string(bytes.TrimSpace(next)) == `{"status":"ok"}`,
		"the next request on the connection gets serve's answer (reused %v, %d %q, %v)", reused, status, bytes.TrimSpace(next), err)

	small := []byte(strings.Repeat("0123456789", 60))
	su, err := c.uploadFile(ctx, client, id+"-small", small)
	if err != nil {
		return fail(err)
	}
	var every []string
	for i := 0; i < 598; i += 2 {
		every = append(every, fmt.Sprintf("%d-%d", i, i))
	}
	body, status, _, err := get(su, "Range", "bytes="+strings.Join(every, ","))
	p.check(err == nil && len(body) <= len(small), "299 one-byte ranges of a 600-byte file answer %d: %d bytes", status, len(body))
	return c.end(p)
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// uploadFile files a drive-files record naming id, uploads data as its
// file and returns its download URL.
func (c config) uploadFile(ctx context.Context, client *http.Client, id string, data []byte) (string, error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	snap := fmt.Sprintf(`{"id":%q,"restaurantId":"demo-bistro","mutationId":"m-%s","capturedAt":%q,"sourceVersion":null,"payloadVersion":1,`+
		`"deleted":false,"data":{"s3Key":"k","name":"n","sizeBytes":%d,"asset":{"objectKey":%q,"status":"pending"}}}`, id, id, now, len(data), id)
	rec := c.api + "/v1/ingest/restaurants/demo-bistro/collections/drive-files/records/" + id
	if _, err := do(ctx, client, http.MethodPut, rec+"/mutations/m-"+id, c.writerKey, []byte(snap),
		"Content-Type", "application/json", "Idempotency-Key", "m-"+id); err != nil {
		return "", err
	}
	d := sha256.Sum256(data)
	if _, err := do(ctx, client, http.MethodPut, rec+"/asset?objectKey="+id, c.writerKey, data,
		"Content-Type", "application/octet-stream", "Repr-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(d[:])+":"); err != nil {
		return "", err
	}
	list, err := do(ctx, client, http.MethodGet, c.api+"/v1/restaurants/demo-bistro/collections/drive-files/records/"+id+"/assets", c.writerKey, nil)
	if err != nil {
		return "", err
	}
	var files struct{ Data []struct{ URL string } }
	if err := json.Unmarshal(list, &files); err != nil || len(files.Data) != 1 {
		return "", fmt.Errorf("asset list %s: %v", list, err)
	}
	return files.Data[0].URL, nil
}

// do sends one request with a key and returns the body of a 2xx answer.
func do(ctx context.Context, client *http.Client, method, url, key string, body []byte, hdr ...string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode/100 != 2 {
		err = fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, b)
	}
	return b, err
}

// versionFlood: a partner's walk page, quiet and then while 16
// connections flood /health/version.
func (c config) versionFlood() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	partner := from(1, 10*time.Second)
	// A sync's read: a walk page of 100 records.
	page := c.api + "/v1/restaurants/demo-bistro/collections/temperature-records/records?limit=100"
	read := func(n int) (p50, p99 time.Duration, failed int) {
		var ds []time.Duration
		for range n {
			t0 := time.Now()
			if _, err := do(ctx, partner, http.MethodGet, page, c.mcpKey, nil); err != nil {
				failed++
			}
			ds = append(ds, time.Since(t0))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2], ds[len(ds)*99/100], failed
	}
	read(20) // warm: the key in the cache, connections open
	quiet, quiet99, _ := read(100)
	p := c.start("version flood: 16 connections on /health/version while a partner reads")
	// The flood runs in a process of its own, as an attacker's client
	// would: in this one, its goroutines would delay the partner's own.
	// At the lowest priority: on loopback the flood's client shares
	// serve's two cores, where a remote attacker's client would not; only
	// serve's own work for the flood should compete with the partner.
	child := exec.Command("nice", "-n", "19", os.Args[0], "-flood-child", c.api+c.floodPath)
	in, _ := child.StdinPipe()
	var out bytes.Buffer
	child.Stdout = &out
	t0 := time.Now()
	if err := child.Start(); err != nil {
		p.check(false, "flood: %v", err)
		return c.end(p)
	}
	time.Sleep(500 * time.Millisecond) // the flood at full rate before measuring
	loud, loud99, failed := read(100)
	_ = in.Close()
	_ = child.Wait()
	var answered, versionFail int64
	_, _ = fmt.Sscan(out.String(), &answered, &versionFail)
	rate := float64(answered) / time.Since(t0).Seconds()
	p.check(failed == 0 && versionFail == 0, "every read and every /health/version answered (%d and %d failed)", failed, versionFail)
	p.check(loud <= 2*quiet, "the partner's walk page: p50 %.1f ms quiet, %.1f ms under the flood (p99 %.1f / %.1f ms); /health/version at %.0f answers/s",
		ms(quiet), ms(loud), ms(quiet99), ms(loud99), rate)
	return c.end(p)
}

// floodUntilStdinCloses sends GETs of url from 16 connections (from
// 127.0.0.2) until stdin closes, then prints how many were answered 200
// and how many not.
func floodUntilStdinCloses(url string) {
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	client := from(2, 10*time.Second)
	var answered, failed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := client.Get(url)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				if res.StatusCode == http.StatusOK {
					answered.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println(answered.Load(), failed.Load())
}

// bodies: 60 hostile 1 MiB JSON bodies at once, REST and MCP.
func (c config) bodies() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := from(4, 60*time.Second)
	zeros := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n/2), ",") }
	envelope := func(data string) []byte {
		return []byte(`{"id":"h1","restaurantId":"demo-bistro","mutationId":"h1","capturedAt":"1700000000000","sourceVersion":null,` +
			`"payloadVersion":1,"deleted":false,"data":` + data + `}`)
	}
	var members strings.Builder
	for i := 0; members.Len() < 1<<20-200; i++ {
		fmt.Fprintf(&members, `"m%d":0,`, i)
	}
	kinds := []struct {
		path string
		key  string
		body []byte
	}{
		{"/v1/ingest/restaurants/demo-bistro/collections/areas/records/h1/mutations/h1", c.writerKey,
			envelope(`{"name":"x","isDeleted":false,"x":[` + zeros(1<<20-200) + `]}`)},
		{"/v1/ingest/restaurants/demo-bistro/collections/areas/records/h1/mutations/h1", c.writerKey, envelope(`{` + members.String() + `"name":"x"}`)},
		{"/mcp", c.mcpKey, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_restaurants","arguments":{},` +
			`"_meta":{"x":[` + zeros(1<<20-200) + `]}}}`)},
	}
	p := c.start("bodies: 60 hostile 1 MiB JSON bodies at once (arrays of zeros, unknown members, an MCP _meta)")
	p.memory = true
	res := make([]answer, 60)
	var wg sync.WaitGroup
	for i := range res {
		k := kinds[i%len(kinds)]
		wg.Go(func() {
			t0 := time.Now()
			method := http.MethodPut
			if k.path == "/mcp" {
				method = http.MethodPost
			}
			req, _ := http.NewRequestWithContext(ctx, method, c.api+k.path, bytes.NewReader(k.body))
			req.Header.Set("Authorization", "Bearer "+k.key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Idempotency-Key", "h1")
			r, err := client.Do(req)
			if err != nil {
				res[i] = answer{err: err, took: time.Since(t0)}
				return
			}
			n, _ := io.Copy(io.Discard, r.Body)
			_ = r.Body.Close()
			res[i] = answer{status: r.StatusCode, took: time.Since(t0), bytes: int(n)}
		})
	}
	wg.Wait()
	bad := 0
	for _, r := range res {
		if r.status != 400 {
			bad++
		}
	}
	for _, row := range tally(res) {
		p.checks = append(p.checks, "     answered "+row.label+": "+row.value)
	}
	p.check(bad == 0, "every body refused 400: %d otherwise", bad)
	return c.end(p)
}

// slowBodies: 50 requests with an unknown key whose bodies never finish,
// each refused within 3 s with its connection closed.
func (c config) slowBodies() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	host := strings.TrimPrefix(c.api, "http://")
	p := c.start("slow bodies: 50 requests with an unknown key whose bodies trickle")
	p.memory = true
	type slow struct {
		conn net.Conn
		err  error
	}
	conns := make([]slow, 50)
	for i := range conns {
		conn, err := dialFrom(ctx, 5, host)
		if err == nil {
			_, err = fmt.Fprintf(conn, "PUT /v1/ingest/restaurants/demo-bistro/collections/areas/records/s%d/mutations/s%d HTTP/1.1\r\n"+
				"Host: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: s%d\r\n"+
				"Content-Length: 100000\r\n\r\n{\"id\":", i, i, host, randomKey(), i)
		}
		conns[i] = slow{conn, err}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, len(conns))
	answered := make([]int, len(conns))
	closed := make([]bool, len(conns))
	for i, s := range conns {
		if s.err != nil {
			continue
		}
		wg.Go(func() {
			defer s.conn.Close()
			_ = s.conn.SetReadDeadline(time.Now().Add(90 * time.Second))
			br := bufio.NewReader(s.conn)
			res, err := http.ReadResponse(br, nil)
			took[i] = time.Since(t0)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			answered[i] = res.StatusCode
			_, err = br.ReadByte()
			closed[i] = err != nil
		})
	}
	wg.Wait()
	late, open, statuses := 0, 0, map[int]int{}
	var worst time.Duration
	for i := range conns {
		statuses[answered[i]]++
		worst = max(worst, took[i])
		if answered[i] == 0 || took[i] > 3*time.Second {
			late++
		}
		if !closed[i] {
			open++
		}
	}
	p.check(late == 0, "each refused within 3 s: %d late, slowest %.2f s, answers %v", late, worst.Seconds(), statuses)
	p.check(open == 0, "each connection closed after its answer: %d left open", open)
	return c.end(p)
}

// randomKey is a well-formed key no server issued.
func randomKey() string {
	return "fsk_" + strings.ToLower(rand.Text()[:20]) + "." + strings.Repeat("s", 43)
}

// randomKeys: an address spends its budget with unknown keys, then sends
// 400 random keys; they must cost no database round trip.
func (c config) randomKeys() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := from(6, 10*time.Second)
	send := func(n int) map[int]int {
		out := map[int]int{}
		for range n {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/v1/changes", nil)
			req.Header.Set("Authorization", "Bearer "+randomKey())
			res, err := client.Do(req)
			if err != nil {
				out[0]++
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			out[res.StatusCode]++
		}
		return out
	}
	// Spend the address's budget first (what a flood does in its first
	// second); the phase measures what comes after.
	for {
		if got := send(50); got[429] > 0 {
			break
		}
	}
	p := c.start("random keys: 400 random keys from an address over its budget")
	got := send(400)
	trips := c.acquisitions() + p.acquired
	p.check(got[429] == 400, "every one answered 429: %v", got)
	p.check(trips <= 40, "at most 40 database round trips: %.0f", trips)
	return c.end(p)
}

// framing: a request with both Content-Length and Transfer-Encoding is
// answered 400 and its connection closed, first on its connection or
// pipelined behind a good request: what follows is never a request. A
// key sent as an MCP tool name and as a JSON-RPC method (the script
// checks that its secret reached no audit row) is not echoed in the
// answer, nor one whose dot is written %2E in a path net/http refuses.
func (c config) framing() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	host := strings.TrimPrefix(c.api, "http://")
	p := c.start("framing and secrets: Content-Length with Transfer-Encoding, first and pipelined; a key as an MCP tool name and method, and %2E in a path")
	client := from(7, 10*time.Second)
	secret := c.writerKey[strings.IndexByte(c.writerKey, '.')+1:]
	echoed := 0
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + c.writerKey + `","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"` + c.writerKey + `","params":{}}`,
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.mcpKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if res, err := client.Do(req); err == nil {
			b, _ := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if strings.Contains(string(b), secret) {
				echoed++
			}
		}
	}
	p.check(echoed == 0, "a key as an MCP tool name and as a method: echoed in %d of 2 answers", echoed)
	for _, before := range []string{"", fmt.Sprintf("GET /health/live HTTP/1.1\r\nHost: %s\r\n\r\n", host)} {
		statuses, more := c.pipeline(ctx, host, before+fmt.Sprintf("POST /v1/mobile/sessions HTTP/1.1\r\nHost: %s\r\n"+
			"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /health/live HTTP/1.1\r\nHost: %s\r\n\r\n", host, host))
		want := map[bool]string{true: "[400]", false: "[200 400]"}[before == ""]
		p.check(fmt.Sprint(statuses) == want && !more, "Content-Length with Transfer-Encoding (%d requests before it): answered %v, and what followed answered too: %v",
			strings.Count(before, " HTTP/1.1"), statuses, more)
	}
	escaped := strings.Replace(c.writerKey, ".", "%2E", 1)
	res, err := c.raw(ctx, host, fmt.Sprintf("GET /v1/%s%%zz HTTP/1.1\r\nHost: %s\r\n\r\n", escaped, host))
	p.check(err == nil && !strings.Contains(res, secret), "a key with its dot written %%2E, in a path net/http refuses: echoed %v (%v)",
		strings.Contains(res, secret), err)
	return c.end(p)
}

// pipeline writes requests in one write on a new connection and reads
// the answers: their statuses, and whether the connection went on after
// a 400 (more) rather than closing.
func (c config) pipeline(ctx context.Context, host, requests string) ([]int, bool) {
	conn, err := dialFrom(ctx, 7, host)
	if err != nil {
		return nil, false
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, requests)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	var statuses []int
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return statuses, false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		statuses = append(statuses, res.StatusCode)
		if res.StatusCode == http.StatusBadRequest {
			_, err := http.ReadResponse(br, nil)
			return statuses, err == nil
		}
	}
}

// raw writes a request on a new connection and returns the whole answer.
func (c config) raw(ctx context.Context, host, request string) (string, error) {
	conn, err := dialFrom(ctx, 7, host)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// idleConnection sends one GET /health/live, then nothing, and says when
// serve closed the connection (or that it did not within idleWait).
func (c config) idleConnection() string {
	host := strings.TrimPrefix(c.api, "http://")
	conn, err := dialFrom(context.Background(), 8, host)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_, _ = fmt.Fprintf(conn, "GET /health/live HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return err.Error()
	}
	_, _ = io.Copy(io.Discard, res.Body)
	t0 := time.Now()
	_ = conn.SetReadDeadline(t0.Add(c.idleWait))
	if _, err := br.ReadByte(); err != nil && !os.IsTimeout(err) {
		return fmt.Sprintf("closed by serve after %.1f s", time.Since(t0).Seconds())
	}
	return fmt.Sprintf("still open after %.0f s", c.idleWait.Seconds())
}

// stalledUpload writes a chunked PUT with one 5-byte chunk on a raw
// connection, calls sent, and waits for the answer without sending more.
func stalledUpload(ctx context.Context, c config, key string, digest [32]byte, sent func()) answer {
	once := sync.OnceFunc(sent)
	defer once()
	t0 := time.Now()
	host := strings.TrimPrefix(c.api, "http://")
	conn, err := dialFrom(ctx, 1, host)
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
	req.Header.Set("Authorization", "Bearer "+c.batchKey)
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

// acquisitions is serve's pool acquisitions so far, from /metrics (NaN
// without an operator listener).
func (c config) acquisitions() float64 {
	if c.ops == "" {
		return 0
	}
	resp, err := http.Get(c.ops + "/metrics")
	if err != nil {
		return 0
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "foodsafe_db_pool_acquires_total "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
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
