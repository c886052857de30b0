package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The attacks on what serve keys by client (its address, an IPv6 /64) and
// on how it closes a connection, each measured with a partner reading
// beside it.

// proxyAddr is the loopback address hostile.sh names in
// FOODSAFE_TRUSTED_PROXIES: requests from it are attributed to the
// address their X-Forwarded-For names, as behind a correctly configured
// proxy.
const proxyAddr = 9

// partner reads a walk page of 100 temperature records every 250 ms (240
// a minute, within a key's budget of 300) from an address of its own,
// over a kept connection, while an attack runs.
type partner struct {
	took     []time.Duration
	failed   int
	p50, p99 time.Duration
}

// withPartner starts the partner's reads; end stops them and reports.
func (c config) withPartner(p *phase) {
	pt := &partner{}
	p.partner = pt
	client := from(12, 10*time.Second)
	page := c.api + "/v1/restaurants/demo-bistro/collections/temperature-records/records?limit=100"
	p.wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			t0 := time.Now()
			if _, err := do(context.Background(), client, http.MethodGet, page, c.partnerKey, nil); err != nil {
				pt.failed++
			}
			pt.took = append(pt.took, time.Since(t0))
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	})
}

// quietPartner is the partner's latency with nothing else running.
func (c config) quietPartner() (p50, p99 time.Duration) {
	client := from(12, 10*time.Second)
	page := c.api + "/v1/restaurants/demo-bistro/collections/temperature-records/records?limit=100"
	var ds []time.Duration
	for i := range 25 {
		t0 := time.Now()
		_, _ = do(context.Background(), client, http.MethodGet, page, c.partnerKey, nil)
		if i >= 5 { // the first open the connection and warm the key
			ds = append(ds, time.Since(t0))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return percentiles(ds)
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

// report adds the partner's figures to the phase.
func (pt *partner) report(p *phase) {
	pt.p50, pt.p99 = percentiles(pt.took)
	p.check(pt.failed == 0, "the partner's %d walk pages: p50 %.1f ms, p99 %.1f ms, %d failed", len(pt.took), ms(pt.p50), ms(pt.p99), pt.failed)
}

// An attack of requests sends attackRate requests a second for
// attackFor (8 at once at most), whatever serve answers, so that the
// same attack is measured against every build: long enough for the
// partner beside it to read 40 pages.
const (
	attackFor  = 10 * time.Second
	attackRate = 2000
)

// send makes the attack's requests from client, each built by mk, and
// tallies their statuses (0: no answer).
func send(ctx context.Context, client *http.Client, mk func(i int) *http.Request) map[int]int {
	var mu sync.Mutex
	out := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	n := int(attackFor.Seconds() * attackRate)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / attackRate)))
				status := 0
				if res, err := client.Do(mk(i).WithContext(ctx)); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					status = res.StatusCode
				}
				mu.Lock()
				out[status]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// ipv6Prefix: 2,000 unknown keys a second for 10 s, each from a random
// address of one IPv6 /64, through the trusted proxy. An IPv6 client
// holds the whole /64: one budget, so all but a window's budget (or two,
// when the minute turns) meet 429 without a key lookup.
func (c config) ipv6Prefix() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := from(proxyAddr, 10*time.Second)
	slash64 := netip.MustParsePrefix("2001:db8:1:2::/64")
	p := c.start("ipv6: 2,000 unknown keys a second for 10 s, from random addresses of one IPv6 /64, through a trusted proxy")
	c.withPartner(p)
	got := send(ctx, client, func(int) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, c.api+"/v1/restaurants/demo-bistro/collections", nil)
		req.Header.Set("Authorization", "Bearer "+randomKey())
		req.Header.Set("X-Forwarded-For", randomIn(slash64).String())
		return req
	})
	trips := c.acquisitions() + p.acquired
	p.check(got[401] <= 600 && len(got) <= 2, "at most two windows' budgets (600) answered 401, the rest 429: %v", got)
	p.check(trips <= 640, "at most a lookup per budget's request: %.0f database round trips", trips)
	return c.end(p)
}

// manyAddresses: 2,000 requests without a key a second for 10 s, each
// from an IPv4 address of its own, through the trusted proxy: each a
// refusal audited by shape, a row per address before audit_counts was
// bounded in rows (the script counts them).
func (c config) manyAddresses() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	client := from(proxyAddr, 10*time.Second)
	p := c.start("addresses: 2,000 requests without a key a second for 10 s, each from an IPv4 address of its own, through a trusted proxy")
	c.withPartner(p)
	got := send(ctx, client, func(i int) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, c.api+"/v1/restaurants", nil)
		req.Header.Set("X-Forwarded-For", netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}).String())
		return req
	})
	p.check(got[401] == int(attackFor.Seconds()*attackRate), "every one answered 401: %v", got)
	return c.end(p)
}

// oneAddressConnections: one address opens as many connections as serve
// holds (FOODSAFE_MAX_CONNECTIONS), each a GET /health/live then kept
// open, as idle keep-alives that cost it nothing, and keeps opening more
// as serve closes others (another phase's idle ones) or refuses them;
// meanwhile another address opens new connections, which must be served.
func (c config) oneAddressConnections() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	host := strings.TrimPrefix(c.api, "http://")
	p := c.start(fmt.Sprintf("connections: one address opens %d connections, keeps them and keeps opening more", c.maxConns))
	p.memory = true
	c.withPartner(p)
	var mu sync.Mutex
	var held []net.Conn
	statuses := map[int]int{}
	attempts := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range statuses {
			n += v
		}
		return n
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				full := len(held) >= c.maxConns
				mu.Unlock()
				conn, status := net.Conn(nil), 0
				if !full {
					conn, status = liveOn(ctx, 10, host)
				}
				mu.Lock()
				if !full {
					statuses[status]++
				}
				if conn != nil {
					held = append(held, conn)
				}
				mu.Unlock()
				if conn == nil {
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	for attempts() < c.maxConns {
		time.Sleep(50 * time.Millisecond)
	}
	served := 0
	for range 20 {
		if conn, status := liveOn(ctx, 11, host); status == http.StatusOK {
			served++
			_ = conn.Close()
		}
		time.Sleep(400 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for _, conn := range held {
		_ = conn.Close()
	}
	p.check(true, "the address held %d connections; its %d attempts answered %v", len(held), attempts(), statuses)
	p.check(served == 20, "another address's new connections served: %d of 20", served)
	return c.end(p)
}

// liveOn opens a connection from 127.0.0.n, sends GET /health/live and
// reads the answer: the connection, still open, when it was 200.
func liveOn(ctx context.Context, n int, host string) (net.Conn, int) {
	conn, err := dialFrom(ctx, n, host)
	if err != nil {
		return nil, 0
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET /health/live HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		_ = conn.Close()
		return nil, 0
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		_ = conn.Close()
		return nil, 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = conn.SetDeadline(time.Time{})
	if res.StatusCode != http.StatusOK {
		_ = conn.Close()
		return nil, res.StatusCode
	}
	return conn, res.StatusCode
}

// refusedBodies: 4 rounds, 2 s apart, of 40 clients at once that each
// send a 2 MiB JSON body whole (its head, then every byte) before
// reading, as Python's http.client does, and read the 413 the body was
// refused with.
func (c config) refusedBodies() bool {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	host := strings.TrimPrefix(c.api, "http://")
	p := c.start("refused bodies: 4 rounds of 40 clients that send a 2 MiB body whole, then read the answer")
	p.memory = true
	c.withPartner(p)
	body := []byte("{" + strings.Repeat(" ", 2<<20-2) + "}")
	outcomes := make([]string, 160)
	var wg sync.WaitGroup
	for i := range outcomes {
		if i > 0 && i%40 == 0 {
			wg.Wait()
			time.Sleep(2 * time.Second)
		}
		wg.Go(func() {
			conn, err := dialFrom(ctx, 13, host)
			if err != nil {
				outcomes[i] = "dial: " + err.Error()
				return
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
			_, err = fmt.Fprintf(conn, "PUT /v1/ingest/restaurants/demo-bistro/collections/areas/records/r%d/mutations/r%d HTTP/1.1\r\n"+
				"Host: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: r%d\r\n"+
				"Content-Length: %d\r\n\r\n", i, i, host, c.writerKey, i, len(body))
			if err == nil {
				_, err = conn.Write(body)
			}
			if err != nil {
				outcomes[i] = "sending: " + errorKind(err)
				return
			}
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				outcomes[i] = "reading: " + errorKind(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			outcomes[i] = fmt.Sprint(res.StatusCode)
		})
	}
	wg.Wait()
	tally := map[string]int{}
	for _, o := range outcomes {
		tally[o]++
	}
	p.check(tally["413"] == len(outcomes), "every client read its 413: %v", tally)
	return c.end(p)
}

// errorKind names a connection error without its addresses.
func errorKind(err error) string {
	s := err.Error()
	for _, k := range []string{"connection reset by peer", "broken pipe", "EOF", "i/o timeout"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	return s
}

// randomIn is a random address of prefix.
func randomIn(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	for i := p.Bits() / 8; i < 16; i++ {
		b[i] = byte(rand.Uint32())
	}
	return netip.AddrFrom16(b)
}
