package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// trackedFiles runs CI's check of the index (.ci/tracked-files) on the
// repository at dir, returning its output and whether it passed.
func trackedFiles(t *testing.T, dir string) (string, bool) {
	t.Helper()
	script, err := filepath.Abs("../.ci/tracked-files")
	require.NoError(t, err)
	out, err := exec.Command(script, dir).CombinedOutput()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		require.NoError(t, err, "%s", out)
	}
	return string(out), err == nil
}

// The repository tracks no build output and no file over 2 MB: the check
// CI runs passes on it.
func TestRepositoryTracksNoBuildOutput(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipped: no git on PATH (install git to run it)")
	}
	text, ok := trackedFiles(t, "..")
	require.True(t, ok, "%s", text)
	// And a build of the binary where the operator guide builds it is
	// ignored, not a change to the work tree.
	built := []string{"foodsafe", "foodsafe-sync", "bin/foodsafe"}
	ignored := exec.Command("git", append([]string{"check-ignore"}, built...)...)
	ignored.Dir = ".."
	out, err := ignored.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, built, strings.Fields(string(out)), "the binaries go build writes are ignored")
}

// CI's check refuses a tracked executable or object file whatever its name,
// a file named like the binaries, and any file over 2,000,000 bytes; a
// file of exactly 2,000,000 bytes, images and text pass, and so does build
// output that is present but not tracked.
func TestTrackedFilesCheckRefuses(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipped: no git on PATH (install git to run it)")
	}
	for _, tc := range []struct {
		name    string
		path    string
		content []byte
		refused bool
	}{
		{"text", "README.md", []byte("# hello\n"), false},
		{"a photo", "tests/testdata/photo.jpg", append([]byte{0xff, 0xd8, 0xff, 0xe0}, make([]byte, 100)...), false},
		{"2,000,000 bytes", "big.json", []byte(strings.Repeat("x", 2_000_000)), false},
		{"2,000,001 bytes", "bigger.json", []byte(strings.Repeat("x", 2_000_001)), true},
		{"an ELF binary under another name", "tools/helper", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...), true},
		{"a Mach-O binary", "helper.bin", append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 64)...), true},
		{"a Windows binary", "helper.dat", append([]byte("MZ\x90\x00"), make([]byte, 64)...), true},
		{"a Go package archive", "pkg.a", []byte("!<arch>\n__.PKGDEF 0 0 0 644 10 `\n"), true},
		{"the binary's name", "foodsafe", []byte("#!/bin/sh\n"), true},
		{"a test binary", "tests.test", []byte("x"), true},
		{"under bin/", "bin/foodsafe-sync", []byte("x"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.test"}, args...)...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "git %v: %s", args, out)
			}
			git("init", "-q")
			write := func(path string, b []byte) {
				t.Helper()
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, path), b, 0o644))
			}
			write("go.mod", []byte("module x\n"))
			// Build output that is not tracked is no concern of the check.
			write("untracked-binary", []byte("\x7fELF\x02\x01\x01\x00"))
			git("add", "go.mod")
			out, ok := trackedFiles(t, dir)
			require.True(t, ok, "%s", out)

			write(tc.path, tc.content)
			git("add", "-f", tc.path)
			out, ok = trackedFiles(t, dir)
			require.Equal(t, !tc.refused, ok, "%s", out)
			if tc.refused {
				require.Contains(t, out, tc.path+": ")
				require.NotContains(t, out, "untracked-binary")
			}
		})
	}
}
