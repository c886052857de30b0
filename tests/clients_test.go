package tests

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/config"
)

// behindProxy is an app behind a proxy it trusts (the test's own loopback
// connections), so X-Forwarded-For chooses the client address, as a
// correctly configured proxy in front of the service would.
func behindProxy(t *testing.T, set func(*config.Config)) *app {
	return newApp(t, withConfig(func(c *config.Config) {
		c.AuditFlushInterval = time.Hour
		require.NoError(t, c.TrustedProxies.UnmarshalText([]byte("127.0.0.1, ::1")))
		set(c)
	}))
}

// randomIn is a random address of prefix.
func randomIn(p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	for i := p.Bits() / 8; i < 16; i++ {
		b[i] = byte(rand.Uint32())
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// An IPv6 client holds a /64 and may send each request from a new address
// of it: 200 unknown keys, each from a random address of one /64, meet
// 429 once the /64's budget is spent, while another /64 still has its
// own. The audit trail names the /64, and the requests' own addresses stay
// in the logs.
func TestIPv6ClientsShareABudgetPerPrefix(t *testing.T) {
	t.Parallel()
	const budget = 50
	a := behindProxy(t, func(c *config.Config) { c.RateLimit = budget })
	slash64 := netip.MustParsePrefix("2001:db8:1:2::/64")
	statuses := map[int]int{}
	var last netip.Addr
	for range 200 {
		last = randomIn(slash64)
		statuses[a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", last.String()).Status]++
	}
	t.Logf("200 unknown keys from random addresses of one /64: %v", statuses)
	// At most two windows' budgets: the minute may turn during the test.
	require.LessOrEqual(t, statuses[http.StatusUnauthorized], 2*budget)
	require.Equal(t, 200, statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests])
	require429(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", randomIn(slash64).String()))
	requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", "2001:db8:1:3::1"),
		http.StatusUnauthorized, "unauthorized")
	require.Contains(t, a.logs.String(), `"client_ip":"`+last.String()+`"`)

	counts := flushedCounts(t, a)
	var named int64
	for _, c := range counts {
		require.NotEqual(t, 128, c.Client.Bits(), "no row names a single IPv6 address: %+v", c)
		if c.Client == slash64 {
			named += c.Requests
		}
	}
	require.Equal(t, int64(201), named, "the /64's requests, counted under it")
}

// The prefix lengths are settings: with FOODSAFE_CLIENT_PREFIX_IPV4=24
// the addresses of a /24 share one budget, and with
// FOODSAFE_CLIENT_PREFIX_IPV6=128 each IPv6 address is a client.
func TestClientPrefixesAreSettings(t *testing.T) {
	t.Parallel()
	a := behindProxy(t, func(c *config.Config) { c.RateLimit, c.ClientPrefixIPv4, c.ClientPrefixIPv6 = 3, 24, 128 })
	for i := range 3 {
		requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)),
			http.StatusUnauthorized, "unauthorized")
	}
	require429(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", "198.51.100.200"))
	requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", "198.51.101.1"), http.StatusUnauthorized, "unauthorized")
	for i := range 5 {
		requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", fmt.Sprintf("2001:db8::%d", i+1)),
			http.StatusUnauthorized, "unauthorized")
	}
}

// However many addresses a minute brings, audit_counts gains a bounded
// number of rows (FOODSAFE_AUDIT_COUNT_ROWS, 100): 200 addresses, each
// with an unknown key, add at most 100 rows, the heaviest address keeps
// its own row, and every request is counted, the rest in one row.
func TestAuditCountsAreBoundedWhateverTheAddresses(t *testing.T) {
	t.Parallel()
	a := behindProxy(t, func(*config.Config) {})
	require.Equal(t, 100, a.cfg.AuditCountRows, "the default")
	for range 3 {
		requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", "203.0.113.77"), http.StatusUnauthorized, "unauthorized")
	}
	for i := range 200 {
		addr := netip.AddrFrom4([4]byte{198, 18, byte(i / 250), byte(1 + i%250)})
		requireProblem(t, a.getAs(randomKey(), "/v1/changes", "X-Forwarded-For", addr.String()), http.StatusUnauthorized, "unauthorized")
	}
	counts := flushedCounts(t, a)
	var requests int64
	minutes := map[time.Time]bool{}
	heaviest := false
	for _, c := range counts {
		requests += c.Requests
		minutes[c.Minute] = true
		heaviest = heaviest || (c.Client == netip.MustParsePrefix("203.0.113.77/32") && c.Requests == 3)
	}
	t.Logf("203 requests from 201 addresses: %d rows over %d minutes", len(counts), len(minutes))
	require.LessOrEqual(t, len(counts), 100*len(minutes))
	if len(minutes) == 1 {
		require.True(t, heaviest, "the heaviest address keeps its row")
		rest, ok := findCount(counts, audit.RestRoute, 0, "")
		require.True(t, ok)
		require.Equal(t, "::/0", rest.Client.String())
	}
	require.Equal(t, int64(203), requests, "every request counted")
}
