package testdb

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
)

const probeEnv = "FOODSAFE_TESTDB_PANIC_PROBE"

// A test binary that starts the container and then panics (as a test's
// panic or go test's -timeout ends it: Main never returns) leaves no
// container behind, Ryuk disabled: the watchdog removes it.
func TestWatchdogRemovesContainerOfAPanickedBinary(t *testing.T) {
	if os.Getenv(probeEnv) != "" {
		if _, err := startContainer(); err != nil {
			fmt.Printf("not started: %v\n", err)
			stopContainer()
			os.Exit(3)
		}
		fmt.Printf("container %s\n", container.GetContainerID())
		panic("probe: the binary ends without Main")
	}
	if !dockerAvailable() {
		t.Skip("skipped: no Docker engine answers (start one, with TEST_POSTGRES_IMAGE an image it holds, to run it)")
	}
	probe := exec.Command(os.Args[0], "-test.run=^TestWatchdogRemovesContainerOfAPanickedBinary$", "-test.count=1")
	probe.Env = append(os.Environ(), probeEnv+"=1", "TESTCONTAINERS_RYUK_DISABLED=true")
	out, err := probe.CombinedOutput()
	if _, why, ok := strings.Cut(string(out), "not started: "); ok {
		why, _, _ = strings.Cut(why, "\n")
		t.Skipf("skipped: a Docker engine answers but cannot start image %s (set TEST_POSTGRES_IMAGE to an image it holds to run it): %s",
			image(), why)
	}
	require.Error(t, err, "the probe must die of its panic:\n%s", out)
	require.Contains(t, string(out), "probe: the binary ends without Main")
	var id string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "container "); ok {
			id = rest
		}
	}
	require.NotEmpty(t, id, "the probe printed no container id:\n%s", out)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	defer cli.Close()
	t.Cleanup(func() { // when the watchdog failed, leave nothing behind either
		_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	})
	// The watchdog acts once the probe's end of the pipe is closed, which
	// happened when it died: wait for the removal, within the context.
	for {
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if errdefs.IsNotFound(err) {
			return
		}
		require.NoError(t, err, "inspect %s", id)
		select {
		case <-ctx.Done():
			t.Fatalf("container %s is still there 2 minutes after its test binary died", id)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
