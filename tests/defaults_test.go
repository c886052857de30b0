package tests

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// envWithout is this process's environment without the named variables.
func envWithout(names ...string) []string {
	var out []string
next:
	for _, kv := range os.Environ() {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// With Prometheus's own port (9090) taken, `foodsafe serve` with the
// default operator listener still starts, and /metrics answers there.
func TestServeDefaultsLeavePrometheusPortAlone(t *testing.T) {
	// Not parallel: it binds a fixed port (the default) for its duration.
	if ln, err := net.Listen("tcp", "127.0.0.1:9090"); err == nil {
		defer ln.Close()
	} else {
		require.True(t, errors.Is(err, syscall.EADDRINUSE), "127.0.0.1:9090: %v", err)
		// Another process (a Prometheus server, say) already holds it.
	}
	if probe, err := net.Listen("tcp", config.DefaultMetricsAddr); err != nil {
		t.Skipf("skipped: the default operator address %s is taken on this machine (%v)", config.DefaultMetricsAddr, err)
	} else {
		require.NoError(t, probe.Close())
	}
	env := append(envWithout("FOODSAFE_METRICS_ADDR"),
		"DATABASE_URL="+testdb.URL(t), "FOODSAFE_BLOB_DIR="+t.TempDir(),
		"FOODSAFE_ADDR=127.0.0.1:0", "FOODSAFE_LOG_LEVEL=info")
	cmd := exec.Command(foodsafeBinary(t), "serve")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := startServeCmd(t, cmd)
	ops := p.opsURL(t)
	require.Equal(t, "http://"+config.DefaultMetricsAddr, ops)
	require.Contains(t, scrapeURL(t, ops), "foodsafe_build_info")
}

// A listener that cannot bind its address names the variable that moves
// it: the operator's fix is in the one line serve prints.
func TestServeBindFailureNamesTheVariable(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	db := "DATABASE_URL=" + testdb.URL(t)
	for _, variable := range []string{"FOODSAFE_ADDR", "FOODSAFE_METRICS_ADDR"} {
		code, out := runServe(t, db, "FOODSAFE_BLOB_DIR="+t.TempDir(), variable+"="+taken.Addr().String())
		require.Equal(t, 1, code, "%s", out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		last := lines[len(lines)-1]
		require.True(t, strings.HasPrefix(last, "foodsafe: "+variable+": "), "last line: %s", last)
		require.Contains(t, last, "address already in use")
		require.Contains(t, last, "set "+variable+" to a free address")
	}
}
