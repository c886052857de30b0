package tests

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// Behind proxies named in FOODSAFE_TRUSTED_PROXIES each client has its
// own per-IP budget and audit IP: the address the proxies appended to
// X-Forwarded-For, whatever the client put before it. From anywhere else,
// and without the setting, forwarded headers change nothing.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	unknown := func(a *app, xff string) response {
		return a.get("/v1/restaurants", "Authorization", "Bearer "+randomKey(), "X-Forwarded-For", xff)
	}
	setup := func(t *testing.T, proxies string) (*app, string) {
		a := newApp(t, withConfig(func(c *config.Config) {
			c.RateLimit, c.AuditFlushInterval = 3, time.Hour
			require.NoError(t, c.TrustedProxies.UnmarshalText([]byte(proxies)))
		}))
		a.addRestaurants("r1")
		// The key's requests come before its address's budget is spent, or
		// from an address of their own: they need no warm key cache.
		return a, a.newKey(grant("r1", "deliveries:read"))
	}
	auditIP := func(t *testing.T, a *app, requestID string) netip.Addr {
		e, ok := findEvent(flushedAudit(t, a), requestID)
		require.True(t, ok)
		return e.ClientIP
	}

	t.Run("trusted", func(t *testing.T) {
		t.Parallel()
		a, key := setup(t, "10.0.0.0/8, 127.0.0.1")
		for range 3 {
			requireProblem(t, unknown(a, "203.0.113.5"), http.StatusUnauthorized, "unauthorized")
		}
		require429(t, unknown(a, "203.0.113.5"))
		// What the client wrote before the proxy's entry is not believed; trusted
		// proxies in the chain are skipped.
		require429(t, unknown(a, "198.51.100.1, 203.0.113.5"))
		require429(t, unknown(a, "203.0.113.5, 10.1.2.3"))
		requireProblem(t, unknown(a, "203.0.113.6"), http.StatusUnauthorized, "unauthorized")
		require.Contains(t, a.logs.String(), `"client_ip":"203.0.113.6"`)
		ok := a.getAs(key, "/v1/restaurants", "X-Forwarded-For", "203.0.113.10", "X-Request-ID", "behind-proxy")
		require.Equal(t, http.StatusOK, ok.Status)
		require.Equal(t, netip.MustParseAddr("203.0.113.10"), auditIP(t, a, "behind-proxy"))
	})

	for name, proxies := range map[string]string{"unset": "", "another network": "10.0.0.0/8"} {
		t.Run("untrusted, "+name, func(t *testing.T) {
			t.Parallel()
			a, key := setup(t, proxies)
			ok := a.getAs(key, "/v1/restaurants", "X-Forwarded-For", "203.0.113.10", "X-Request-ID", "not-behind-proxy")
			require.Equal(t, http.StatusOK, ok.Status)
			for range 3 {
				requireProblem(t, unknown(a, "203.0.113.5"), http.StatusUnauthorized, "unauthorized")
			}
			require429(t, unknown(a, "203.0.113.6")) // one budget: the connection's address
			require.NotContains(t, a.logs.String(), `"client_ip":"203.0.113.`)
			require.True(t, strings.HasPrefix(auditIP(t, a, "not-behind-proxy").String(), "127."))
		})
	}
}
