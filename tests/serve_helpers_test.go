package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveProc is one `foodsafe serve` process, built and run as operators
// run it, listening on a loopback port of its own choosing.
type serveProc struct {
	URL string
	// metrics delivers the operator listener's address once (metricsURL).
	metrics    chan string
	metricsURL string
	cmd        *exec.Cmd
	logs       *logBuffer
}

// startServe runs the binary with env on top of this process's
// environment (which carries the test S3 credentials) and returns once it
// logs the address it listens on. It is stopped with SIGTERM when the test
// ends.
func startServe(t testing.TB, env ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(foodsafeBinary(t), "serve")
	cmd.Env = append(os.Environ(), append([]string{"FOODSAFE_ADDR=127.0.0.1:0", "FOODSAFE_METRICS_ADDR=127.0.0.1:0", "FOODSAFE_LOG_LEVEL=info"}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return startServeCmd(t, cmd)
}

// startServeCmd starts cmd, which runs `foodsafe serve` (itself, or
// through make in a process group of its own: Setpgid), and returns once
// the server logs its address.
func startServeCmd(t testing.TB, cmd *exec.Cmd) *serveProc {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout // the JSON log goes to stderr
	require.NoError(t, cmd.Start())
	p := &serveProc{cmd: cmd, logs: &logBuffer{}}
	listening, metrics := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.logs.Write([]byte(line + "\n"))
			var l struct{ Msg, Addr, Listener string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" {
				if l.Listener == "metrics" {
					metrics <- l.Addr
				} else {
					listening <- l.Addr
				}
			}
		}
		close(listening)
	}()
	addr, ok := <-listening
	if !ok {
		_ = cmd.Wait()
		require.Fail(t, "foodsafe serve exited before listening", "output:\n%s", p.logs.String())
	}
	p.URL = "http://" + addr
	p.metrics = metrics
	t.Cleanup(func() { p.stop(t) })
	return p
}

// opsURL is the base URL of the process's operator listener (/metrics),
// which logs its address on its own goroutine.
func (p *serveProc) opsURL(t testing.TB) string {
	t.Helper()
	if p.metricsURL == "" {
		select {
		case m := <-p.metrics:
			p.metricsURL = "http://" + m
		case <-time.After(10 * time.Second):
			require.Fail(t, "foodsafe serve did not log its operator listener", "output:\n%s", p.logs.String())
		}
	}
	return p.metricsURL
}

// stop ends the process gracefully, then waits for it.
func (p *serveProc) stop(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	if a := p.cmd.SysProcAttr; a != nil && a.Setpgid {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM) // make and the server under it
	} else {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("foodsafe serve did not stop on SIGTERM within 30s")
	}
}

// peakRSS is the process's high-water resident set size (VmHWM), in bytes.
func (p *serveProc) peakRSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.Fail(t, "no VmHWM in /proc status")
	return 0
}

// runServe runs `foodsafe serve` expecting it to fail at start, and
// returns its exit status and output.
func runServe(t testing.TB, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(foodsafeBinary(t), "serve")
	cmd.Env = append(os.Environ(), append([]string{"FOODSAFE_ADDR=127.0.0.1:0", "FOODSAFE_METRICS_ADDR=127.0.0.1:0"}, env...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "serve must fail: %v\n%s", err, out)
	return ee.ExitCode(), string(out)
}

// replica is a view of a on another server process: the same helpers,
// requests sent to p.
func (a *app) replica(p *serveProc) *app {
	return &app{t: a.t, cfg: a.cfg, svc: a.svc, srv: a.srv, logs: a.logs, extraRoutes: a.extraRoutes, remote: p.URL}
}

// served serves a's engine the way `foodsafe serve` does (app.Serve: the
// production http.Server with its timeouts, connection handling and
// canned answers) on a loopback port, sends a's requests there from now
// on, and returns its base URL. The app closes when the test ends.
func (a *app) served() string {
	a.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(a.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.svc.Serve(ctx, ln, nil) }()
	a.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			a.t.Errorf("serve: %v", err)
		}
	})
	a.remote = "http://" + ln.Addr().String()
	return a.remote
}
