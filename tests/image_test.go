package tests

import (
	"crypto/rand"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// docker runs the docker CLI and returns its combined output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	require.NoError(t, err, "docker %s:\n%s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// The container image as an operator uses it: `make image` builds it; from
// it `migrate` creates the schema, `demo` loads a restaurant and `serve`
// answers /health/ready and an authenticated read. The host network
// reaches the test's PostgreSQL.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	if exec.Command("docker", "info").Run() != nil {
		t.Skip("skipped: no Docker engine answers (start one to build and test the image of make image)")
	}
	tag := "foodsafe-test:" + strings.ToLower(rand.Text()[:10])
	build := exec.Command("make", "--no-print-directory", "image", "IMAGE="+tag, "VERSION=9.9.9-test")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", out)
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", "-f", tag).Run() })
	commit, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	require.NoError(t, err)

	require.Equal(t, "65532:65532", docker(t, "image", "inspect", "--format", "{{.Config.User}}", tag), "not root")
	require.Equal(t, "9.9.9-test "+strings.TrimSpace(string(commit)), docker(t, "image", "inspect", "--format",
		`{{index .Config.Labels "org.opencontainers.image.version"}} {{index .Config.Labels "org.opencontainers.image.revision"}}`, tag))
	require.Contains(t, docker(t, "run", "--rm", tag, "--version"), "foodsafe 9.9.9-test (commit "+strings.TrimSpace(string(commit)))

	db := testdb.EmptyURL(t)
	run := []string{"run", "--rm", "--network", "host", "-e", "DATABASE_URL=" + db}
	docker(t, append(run, tag, "migrate")...)
	demo, err := exec.Command("docker", append(run, tag, "demo")...).Output() // the key on stdout
	require.NoError(t, err)
	key := strings.TrimSpace(string(demo))
	require.True(t, strings.HasPrefix(key, "fsk_"), "demo prints the key: %q", key)

	name := "foodsafe-test-" + strings.ToLower(rand.Text()[:10])
	cmd := exec.Command("docker", append(run, "--name", name, "-e", "FOODSAFE_ADDR=127.0.0.1:0",
		"-e", "FOODSAFE_METRICS_ADDR=127.0.0.1:0", tag)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", name).Run() })
	p := startServeCmd(t, cmd) // CMD is serve; SIGTERM reaches it through docker run

	code, body := getDoc(t, p.URL+"/health/ready", "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	code, body = getDoc(t, p.URL+"/v1/restaurants", key)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Contains(t, string(body), "demo-bistro")
}
