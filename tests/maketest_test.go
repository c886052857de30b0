package tests

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `make test` as CI reads it, on a recorded `go test -json` stream (a
// pass, a skip, a failing subtest): the skipped test is listed with the
// reason it gives, a failure with its output, and make's exit status is
// go test's. The Makefile runs with GO set to a script that replays the
// stream for `go test` (keeping the flags it was given) and is the real
// go for everything else (gotestsum is built by `go run`).
func TestMakeTestListsSkipsAndFailures(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("skipped: no make on PATH (install make to run it)")
	}
	realGo, err := exec.LookPath("go")
	require.NoError(t, err, "go on PATH")
	recorded, err := os.ReadFile("testdata/gotest-skip-fail.json")
	require.NoError(t, err)
	// The same run without the failing package: what a green run records.
	var passing bytes.Buffer
	for line := range strings.Lines(string(recorded)) {
		if !strings.Contains(line, `"Package":"github.com/foodsafe/foodsafe/internal/cursor"`) {
			passing.WriteString(line)
		}
	}

	skipLines := []string{
		"=== Skipped",
		"=== SKIP: tests TestContainerImage (0.00s)",
		"    image_test.go:8: skipped: no Docker engine answers (start one to build and test the image of make image)",
	}
	for _, tc := range []struct {
		name   string
		stream []byte
		status int // go test's, replayed
		want   []string
		absent []string
	}{
		{
			name:   "failure",
			stream: recorded,
			status: 1,
			want: append(skipLines,
				"=== Failed",
				"=== FAIL: internal/cursor TestOpen/expired (0.00s)",
				"    cursor_test.go:7: Open: got nil error, want ErrExpired",
				"DONE 4 tests, 1 skipped, 2 failures in"),
		},
		{
			name:   "green",
			stream: passing.Bytes(),
			status: 0,
			want:   append(skipLines, "DONE 2 tests, 1 skipped in"),
			absent: []string{"=== Failed", "FAIL"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			stream, args := filepath.Join(dir, "stream.json"), filepath.Join(dir, "args")
			require.NoError(t, os.WriteFile(stream, tc.stream, 0o600))
			fakeGo := filepath.Join(dir, "go")
			script := "#!/bin/sh\n" +
				"if [ \"$1\" = test ]; then echo \"$@\" > " + args + "; cat " + stream + "; exit " + strconv.Itoa(tc.status) + "; fi\n" +
				"exec " + realGo + " \"$@\"\n"
			require.NoError(t, os.WriteFile(fakeGo, []byte(script), 0o700))

			cmd := exec.Command("make", "--no-print-directory", "test", "GO="+fakeGo)
			cmd.Dir = ".."
			cmd.Env = envWithout("MAKEFLAGS", "MFLAGS", "GOTESTSUM_FORMAT")
			out, err := cmd.CombinedOutput()
			if tc.status == 0 {
				require.NoError(t, err, "make test:\n%s", out)
			} else {
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "make test must fail when go test fails (%v):\n%s", err, out)
			}

			var lines []string
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			require.NoError(t, sc.Err())
			for _, w := range tc.want {
				require.Truef(t, hasLinePrefix(lines, w), "make test printed no line %q:\n%s", w, out)
			}
			for _, a := range tc.absent {
				require.NotContains(t, string(out), a)
			}

			given, err := os.ReadFile(args)
			require.NoError(t, err, "make test did not run go test")
			require.Equal(t, "test -json -race -count=1 -timeout 20m ./...", strings.TrimSpace(string(given)))
		})
	}
}

func hasLinePrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
