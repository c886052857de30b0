package testdb

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// A test binary that started a container removes it in Main, but a panic,
// go test's -timeout, Ctrl-C or SIGKILL ends the binary without Main
// returning, and Ryuk, which would reap the container then, is often
// disabled or cannot be pulled. So each container gets a watchdog: this
// binary run again with watchdogEnv set, in its own process group (Ctrl-C
// at the terminal does not reach it), reading a pipe from the binary. The
// kernel closes the pipe however the binary ends; the watchdog then
// removes the container, unless Main told it the container is gone.
const watchdogEnv = "FOODSAFE_TESTDB_WATCHDOG"

// watchdogDone is what Main writes to the pipe once the container is gone.
const watchdogDone = "done\n"

// watchdogPipe is the write end of the pipe to the watchdog, held open for
// the life of the binary.
var watchdogPipe *os.File

func init() {
	if id := os.Getenv(watchdogEnv); id != "" {
		os.Exit(watch(id))
	}
}

// watch is the watchdog: it blocks until its parent's end of the pipe
// closes and removes the container unless told not to. Its output goes
// nowhere (go test would wait for a writer to its pipes), so it reports
// only through its exit status.
func watch(id string) int {
	msg, _ := io.ReadAll(os.Stdin)
	if string(msg) == watchdogDone {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 1
	}
	defer cli.Close()
	if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
		return 1
	}
	return 0
}

// startWatchdog runs the watchdog for container id (once per binary: the
// harness starts one container).
func startWatchdog(id string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	r, w, err := os.Pipe() // close-on-exec: no other child holds w
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchdogEnv+"="+id)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("watchdog: %w", err)
	}
	_ = cmd.Process.Release()
	watchdogPipe = w
	return nil
}

// stopWatchdog tells the watchdog the container is gone (removed is true)
// or leaves the removal to it, and lets it exit.
func stopWatchdog(removed bool) {
	if watchdogPipe == nil {
		return
	}
	if removed {
		_, _ = io.WriteString(watchdogPipe, watchdogDone)
	}
	_ = watchdogPipe.Close()
	watchdogPipe = nil
}
