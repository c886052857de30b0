package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// documentedBlock is the first fenced code block of docs/operators.md
// whose info string is lang: what the guide tells operators to run.
func documentedBlock(t *testing.T, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/operators.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "\n```"+lang+"\n")
	require.True(t, ok, "docs/operators.md has a ```%s block", lang)
	block, _, ok := strings.Cut(rest, "\n```\n")
	require.True(t, ok)
	return block + "\n"
}

// proxyTool is the path of a proxy's binary; without it the test skips
// (fails in CI, which installs Debian's nginx-light and haproxy).
func proxyTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: CI runs the documented proxy configurations (.ci/run installs it)", name)
		}
		t.Skipf("skipped: %s is not installed (apt-get install nginx-light haproxy; CI runs this test, set CI to make this a failure)", name)
	}
	return path
}

// startProxy runs the configuration conf of nginx or HAProxy (as the
// guide writes it, but for the addresses: the service's, and the port it
// listens on) in front of serve, on 127.0.0.1:port, until the test ends.
func startProxy(t *testing.T, tool, conf, serve string) string {
	t.Helper()
	bin := proxyTool(t, tool)
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	require.Contains(t, conf, "10.0.1.10:8080")
	conf = strings.ReplaceAll(conf, "10.0.1.10:8080", serve)
	var cmd *exec.Cmd
	switch tool {
	case "nginx":
		require.Contains(t, conf, "listen 80;")
		conf = strings.Replace(conf, "listen 80;", fmt.Sprintf("listen 127.0.0.1:%d;", port), 1)
		file := filepath.Join(dir, "nginx.conf")
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
%[2]s}
`, dir, conf)), 0o600))
		cmd = exec.Command(bin, "-e", "stderr", "-p", dir, "-c", file)
	case "haproxy":
		require.Contains(t, conf, "bind :80")
		conf = strings.Replace(conf, "bind :80", fmt.Sprintf("bind 127.0.0.1:%d", port), 1)
		file := filepath.Join(dir, "haproxy.cfg")
		require.NoError(t, os.WriteFile(file, []byte(conf), 0o600))
		cmd = exec.Command(bin, "-db", "-f", file)
	}
	var out logBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// The proxy configurations of the operator guide make
// FOODSAFE_TRUSTED_PROXIES safe: run as written in front of a real serve,
// a client sending an X-Forwarded-For of its own is audited, logged and
// budgeted as the address it connected from (127.0.0.2), whatever address
// it names. And the setup the guide warns against (nginx's plain
// proxy_pass, the documented block without its X-Forwarded-For line) lets
// the client choose both, as the guide says.
func TestDocumentedProxies(t *testing.T) {
	t.Parallel()
	nginx := documentedBlock(t, "nginx")
	const overwrite = "        proxy_set_header X-Forwarded-For $remote_addr;"
	require.Contains(t, nginx, overwrite)
	for name, tc := range map[string]struct {
		tool, conf string
		safe       bool
	}{
		"nginx":                   {"nginx", nginx, true},
		"haproxy":                 {"haproxy", documentedBlock(t, "haproxy"), true},
		"nginx, plain proxy_pass": {"nginx", regexp.MustCompile(`(?m)^.*X-Forwarded-For.*\n`).ReplaceAllString(nginx, ""), false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			proxyTool(t, tc.tool)
			a := newApp(t, withConfig(func(c *config.Config) {
				c.RateLimit, c.AuditFlushInterval = 3, time.Hour
				require.NoError(t, c.TrustedProxies.UnmarshalText([]byte("127.0.0.1")))
			}))
			a.addRestaurants("r1")
			key := a.newKey(grant("r1", "deliveries:read"))
			proxy := startProxy(t, tc.tool, tc.conf, strings.TrimPrefix(a.served(), "http://"))
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
			get := func(path, bearer, xff, id string) int {
				r, err := http.NewRequest(http.MethodGet, proxy+path, nil)
				require.NoError(t, err)
				r.Header.Set("Authorization", "Bearer "+bearer)
				r.Header.Set("X-Forwarded-For", xff)
				r.Header.Set("X-Request-ID", id)
				res, err := client.Do(r)
				if err != nil {
					return 0
				}
				_, _ = io.Copy(io.Discard, res.Body)
				_ = res.Body.Close()
				return res.StatusCode
			}
			require.Eventually(t, func() bool { return get("/health/live", "", "", "probe") == http.StatusOK },
				10*time.Second, 20*time.Millisecond, "the proxy answers")

			require.Equal(t, http.StatusOK, get("/v1/restaurants", key, "198.51.100.77", "via-proxy"))
			statuses := map[int]int{}
			for i := range 4 {
				statuses[get("/v1/changes", randomKey(), fmt.Sprintf("198.51.100.%d", i+1), fmt.Sprintf("unknown-%d", i))]++
			}
			events := flushedAudit(t, a)
			e, ok := findEvent(events, "via-proxy")
			require.True(t, ok)
			t.Logf("%s: audited as %s; four unknown keys naming four addresses answered %v", name, e.ClientIP, statuses)
			if tc.safe {
				require.Equal(t, "127.0.0.2", e.ClientIP.String(), "audited as the address it connected from")
				require.Equal(t, map[int]int{http.StatusUnauthorized: 3, http.StatusTooManyRequests: 1}, statuses,
					"one budget of 3, whatever the addresses named")
				require.Contains(t, a.logs.String(), `"client_ip":"127.0.0.2"`)
				require.NotContains(t, a.logs.String(), `"client_ip":"198.51.100.`)
				return
			}
			require.Equal(t, "198.51.100.77", e.ClientIP.String(), "the client chose its address")
			require.Equal(t, map[int]int{http.StatusUnauthorized: 4}, statuses, "a fresh budget per address named")
		})
	}
}
