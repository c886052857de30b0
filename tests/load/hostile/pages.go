package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The attack on what an answer holds: records as large as a request body
// allows, read in pages of the largest limit.

// bigRecords is the number of users records of about 1 MiB the pages
// attack writes (through the API, which accepts them: 99 strings of
// 10,000 letters, the longest free text, in modules).
const bigRecords = 100

// seedBigRecords writes the records, four at a time.
func (c config) seedBigRecords(ctx context.Context) error {
	client := from(14, 60*time.Second)
	captured := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)
	var (
		wg    sync.WaitGroup
		next  atomic.Int32
		first atomic.Value
	)
	for range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 49))
			letters := make([]byte, 10_000)
			for i := int(next.Add(1)) - 1; i < bigRecords; i = int(next.Add(1)) - 1 {
				id := fmt.Sprintf("big-%03d", i)
				modules := make([]string, 99)
				for m := range modules {
					for j := range letters {
						letters[j] = 'a' + byte(rng.IntN(26))
					}
					modules[m] = string(letters)
				}
				body, _ := json.Marshal(map[string]any{"id": id, "restaurantId": "demo-bistro", "mutationId": "m-" + id, "capturedAt": captured,
					"sourceVersion": nil, "payloadVersion": 1, "deleted": false,
					"data": map[string]any{"lastName": "Big", "firstName": id, "email": id + "@example.com", "modules": modules}})
				path := c.api + "/v1/ingest/restaurants/demo-bistro/collections/users/records/" + id + "/mutations/m-" + id
				if _, err := do(ctx, client, http.MethodPut, path, c.bigKey, body, "Content-Type", "application/json", "Idempotency-Key", "m-"+id); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// pages: 100 users records of about 1 MiB. Three clients ask for a page
// of 100 and read only its status line (serve holds what it could not
// send until its write timeout), two walk the collection at 100 pages a
// minute between them, ten HEADs of the page, and four MCP walk_records
// of limit 100; a partner reads beside them.
func (c config) pages() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	if err := c.seedBigRecords(ctx); err != nil {
		fmt.Printf("\n== pages\n   FAIL writing %d records of 1 MiB: %v\n", bigRecords, err)
		return false
	}
	p := c.start(fmt.Sprintf("pages: %d users records of 1 MiB; 3 clients ask for a page of 100 and do not read, 2 walk them "+
		"(100 pages a minute), 10 HEADs, 4 MCP walk_records of 100", bigRecords))
	// Answers of 1 MiB records: the bound TestPagesBoundedByBytes holds.
	p.memory, p.maxRSS = true, 400e6
	c.withPartner(p)
	page := "/v1/restaurants/demo-bistro/collections/users/records?limit=100"
	unread, closeUnread := c.unreadPages(ctx, page)
	defer closeUnread()
	var (
		wg     sync.WaitGroup
		walked walkTally
	)
	until := time.Now().Add(30 * time.Second)
	for w := range 2 {
		wg.Go(func() { c.walkBig(ctx, from(16+w, 60*time.Second), page, until, &walked) })
	}
	client := from(18, 60*time.Second)
	heads := c.heads(ctx, client, page)
	mcp := 0
	for range 4 {
		if c.mcpWalk(ctx, client) {
			mcp++
		}
	}
	wg.Wait()
	walks, pagesRead, bad := walked.walks.Load(), walked.pages.Load(), walked.bad.Load()
	p.check(unread == 3, "3 pages asked for and not read: %d answered 200", unread)
	p.check(walks > 0 && bad == 0, "%d whole walks in %d pages, each record once a walk: %d failures", walks, pagesRead, bad)
	p.check(heads == 10, "10 HEADs answered 200: %d", heads)
	p.check(mcp == 4, "4 MCP walk_records of limit 100 answered: %d", mcp)
	return c.end(p)
}

// mcpWalk calls walk_records (limit 100) over the users records at the
// newest protocol revision; true when it answers a page.
func (c config) mcpWalk(ctx context.Context, client *http.Client) bool {
	const rev = "2026-07-28"
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "walk_records", "arguments": map[string]any{"restaurantId": "demo-bistro", "collection": "users", "limit": 100},
		"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": rev, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
	b, err := do(ctx, client, http.MethodPost, c.api+"/mcp", c.bigKey, body, "Content-Type", "application/json",
		"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", rev, "Mcp-Method", "tools/call", "Mcp-Name", "walk_records")
	return err == nil && bytes.Contains(b, []byte(`"structuredContent"`)) && !bytes.Contains(b, []byte(`"isError":true`))
}

// unreadPages asks for page on three connections and reads only each
// answer's status line; n is how many answered 200, and closeAll closes
// them.
func (c config) unreadPages(ctx context.Context, page string) (n int, closeAll func()) {
	host := strings.TrimPrefix(c.api, "http://")
	var conns []net.Conn
	for range 3 {
		conn, err := dialFrom(ctx, 15, host)
		if err != nil {
			continue
		}
		conns = append(conns, conn)
		_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", page, host, c.bigKey)
		if err != nil {
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if status, err := bufio.NewReaderSize(conn, 16).ReadString('\n'); err == nil && strings.Contains(status, " 200 ") {
			n++
		}
	}
	return n, func() {
		for _, conn := range conns {
			_ = conn.Close()
		}
	}
}

// walkTally counts what the walkers did.
type walkTally struct{ walks, pages, bad atomic.Int32 }

// walkBig walks the users records whole, again and again until until, a
// page every 1.2 s, and counts a walk that did not return each big
// record once as bad.
func (c config) walkBig(ctx context.Context, client *http.Client, page string, until time.Time, t *walkTally) {
	tick := time.NewTicker(1200 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(until) {
		seen := map[string]int{}
		cursor := ""
		for {
			var pg struct {
				Data       []struct{ ID string }
				NextCursor *string
			}
			path := c.api + page
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			b, err := do(ctx, client, http.MethodGet, path, c.bigKey, nil)
			if err == nil {
				err = json.Unmarshal(b, &pg)
			}
			<-tick.C
			if err != nil {
				t.bad.Add(1)
				break
			}
			t.pages.Add(1)
			for _, r := range pg.Data {
				if strings.HasPrefix(r.ID, "big-") {
					seen[r.ID]++
				}
			}
			if pg.NextCursor == nil {
				t.walks.Add(1)
				if !once(seen) {
					t.bad.Add(1)
				}
				break
			}
			cursor = *pg.NextCursor
		}
	}
}

// once: every big record seen, each once.
func once(seen map[string]int) bool {
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return len(seen) == bigRecords
}

// heads sends ten HEADs of page and returns how many answered 200.
func (c config) heads(ctx context.Context, client *http.Client, page string) int {
	n := 0
	for range 10 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, c.api+page, nil)
		req.Header.Set("Authorization", "Bearer "+c.bigKey)
		if res, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				n++
			}
		}
	}
	return n
}
