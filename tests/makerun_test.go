package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// makeRun starts `make run` in the repository with its state in data, on
// database dbURL, on port (0: one the kernel picks), and returns the
// server it runs. The signing keys, FOODSAFE_ADDR and FOODSAFE_BASE_URL
// are left unset, as on a developer's machine.
func makeRun(t *testing.T, data, dbURL, port string) *serveProc {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "run", "DATA="+data, "BIN="+filepath.Join(data, "foodsafe"), "RUN_PORT="+port)
	cmd.Dir = ".."
	cmd.Env = append(envWithout("FOODSAFE_CURSOR_KEY", "FOODSAFE_URL_KEY", "FOODSAFE_BLOB_URL", "FOODSAFE_ADDR", "FOODSAFE_BASE_URL",
		"MAKEFLAGS", "MFLAGS"),
		"DATABASE_URL="+dbURL, "FOODSAFE_BLOB_DIR="+filepath.Join(data, "blobs"), "FOODSAFE_METRICS_ADDR=", "FOODSAFE_LOG_LEVEL=info")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return startServeCmd(t, cmd)
}

// getDoc GETs base+path with the key (none when empty) and returns the
// status and body.
func getDoc(t *testing.T, rawURL, key string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

// Stop `make run` and start it again: a changes cursor and a signed
// download URL handed out before the restart still work after it, since
// make run keeps the development signing keys in its data directory. It
// serves on loopback unless told otherwise, keeps the demo key readable by
// its owner only (making a key kept before private too), and hands out
// signed URLs on the address it serves on.
func TestMakeRunSurvivesRestart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("skipped: no make on PATH (install make to run it)")
	}
	data, dbURL := t.TempDir(), testdb.URL(t)
	p := makeRun(t, data, dbURL, "0")
	require.True(t, strings.HasPrefix(p.URL, "http://127.0.0.1:"), "on loopback by default: %s", p.URL)
	demoKey := filepath.Join(data, "demo-key")
	requireMode(t, demoKey, 0o600)
	b, err := os.ReadFile(demoKey)
	require.NoError(t, err)
	key := strings.TrimSpace(string(b))
	const col = "cleaning-task-pictures"
	records := recordsPath("demo-bistro", col)

	// Walk the demo's photos to the end: their ids and a changes cursor.
	var ids []string
	var changes string
	for next := records + "?limit=100"; next != ""; {
		code, body := getDoc(t, p.URL+next, key)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var page walkPage
		require.NoError(t, json.Unmarshal(body, &page))
		for _, e := range page.Data {
			ids = append(ids, e.ID)
		}
		next = ""
		if page.NextCursor != nil {
			next = records + "?limit=100&cursor=" + url.QueryEscape(*page.NextCursor)
		} else {
			require.NotNil(t, page.ChangesCursor)
			changes = *page.ChangesCursor
		}
	}
	var signed, signedID string
	for _, id := range ids {
		code, body := getDoc(t, p.URL+assetsPath("demo-bistro", col, id), key)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var files struct{ Data []fileItem }
		require.NoError(t, json.Unmarshal(body, &files))
		if len(files.Data) > 0 {
			signed, signedID = files.Data[0].URL, id
			break
		}
	}
	require.NotEmpty(t, signed, "the demo has uploaded photos")
	code, want := getDoc(t, signed, "")
	require.Equal(t, http.StatusOK, code, "%s", want)

	p.stop(t)
	// A key kept by an earlier make run, world-readable.
	require.NoError(t, os.Chmod(demoKey, 0o644))
	port := freeLoopbackAddr(t)[len("127.0.0.1:"):]
	p = makeRun(t, data, dbURL, port)
	require.Equal(t, "http://127.0.0.1:"+port, p.URL)
	requireMode(t, demoKey, 0o600)
	for _, f := range []string{"cursor-key", "url-key"} {
		requireMode(t, filepath.Join(data, f), 0o600)
	}
	// Signed URLs are on the address make run serves on (FOODSAFE_BASE_URL).
	code, listed := getDoc(t, p.URL+assetsPath("demo-bistro", col, signedID), key)
	require.Equal(t, http.StatusOK, code, "%s", listed)
	require.Contains(t, string(listed), `"url":"http://127.0.0.1:`+port+`/v1/files/`)

	code, body := getDoc(t, p.URL+records+"?cursor="+url.QueryEscape(changes), key)
	require.Equal(t, http.StatusOK, code, "the changes cursor from before the restart: %s", body)
	// The server listens on a new port; the URL's path and signature are
	// what was handed out.
	u, err := url.Parse(signed)
	require.NoError(t, err)
	u.Host = strings.TrimPrefix(p.URL, "http://")
	code, got := getDoc(t, u.String(), "")
	require.Equal(t, http.StatusOK, code, "the signed URL from before the restart: %s", got)
	require.Equal(t, want, got)
}

// requireMode fails unless the file's permission bits are mode.
func requireMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, mode, st.Mode().Perm(), "%s", path)
}

// README's "Try it" runs as written in a second terminal against `make
// run` on a database other than the default and a port other than 8080,
// once that terminal has what the block's first lines say it needs
// (DATABASE_URL and RUN_PORT as make run had them). Every curl must
// succeed (--fail-with-body, pipefail), the renamed area must come back
// through the changes cursor, and the downloaded file must be the
// record's. The README names the operator listener beside RUN_PORT.
func TestReadmeTryIt(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "bash", "curl", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: no %s on PATH (install it to run the README's commands)", tool)
		}
	}
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	block := shBlockAfter(t, string(readme), "### Try it")
	require.Regexp(t, `(?m)^export DATABASE_URL=`, block, "the second terminal uses make run's database")
	require.Less(t, strings.Index(block, "export DATABASE_URL="), strings.Index(block, "bin/foodsafe"))
	require.Regexp(t, `RUN_PORT=8081 FOODSAFE_METRICS_ADDR=`, string(readme), "moving make run moves the operator listener too")

	out, data := runTryIt(t, block)
	require.Contains(t, out, `"name":"Main kitchen"`, "the renamed area, through the changes cursor")
	pdf, err := os.ReadFile(filepath.Join(data, "haccp-plan.pdf"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(pdf), "%PDF-"))
	require.Contains(t, out, sha256Hex(pdf)+"  .data/haccp-plan.pdf")
}

// shBlockAfter is the first ```sh block of doc after heading.
func shBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, found := strings.Cut(doc, heading)
	require.True(t, found, "no %q", heading)
	_, rest, found = strings.Cut(rest, "```sh\n")
	require.True(t, found, "no sh block after %q", heading)
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// runTryIt runs a documented block as written in a second terminal
// against a fresh `make run` on a database other than the default and a
// port other than 8080, with what such a block's first lines say that
// terminal needs (DATABASE_URL and RUN_PORT as make run had them), from
// a repository root holding make run's .data and bin/foodsafe. Every curl
// must succeed (--fail-with-body, pipefail). It returns the block's output
// and make run's data directory.
func runTryIt(t *testing.T, block string) (string, string) {
	t.Helper()
	data, dbURL := t.TempDir(), testdb.URL(t)
	p := makeRun(t, data, dbURL, "0")
	port := strings.TrimPrefix(p.URL, "http://127.0.0.1:")
	root := t.TempDir()
	require.NoError(t, os.Symlink(data, filepath.Join(root, ".data")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "bin"), 0o750))
	require.NoError(t, os.Symlink(filepath.Join(data, "foodsafe"), filepath.Join(root, "bin", "foodsafe")))
	script := "set -eo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n" + block
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(envWithout("FOODSAFE_CURSOR_KEY", "FOODSAFE_URL_KEY", "FOODSAFE_ADDR", "MAKEFLAGS", "MFLAGS"),
		"DATABASE_URL="+dbURL, "RUN_PORT="+port)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out), data
}

// The mobile guide's round runs as written against a fresh `make run`: a
// device key, a session, one snapshot, a batch whose every item is
// applied, a file uploaded with the digest openssl computed, and the same
// bytes read back through the signed URL.
func TestMobileTryIt(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"make", "bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: no %s on PATH (install it to run the mobile guide's commands)", tool)
		}
	}
	guide, err := os.ReadFile("../docs/mobile.md")
	require.NoError(t, err)
	block := shBlockAfter(t, string(guide), "## Try it: a device's round")
	require.Regexp(t, `(?m)^export DATABASE_URL=`, block, "the second terminal uses make run's database")
	require.Less(t, strings.Index(block, "export DATABASE_URL="), strings.Index(block, "bin/foodsafe"))
	for _, step := range []string{"/v1/mobile/sessions", "/mutations/", "/batch", "openssl dgst -sha256", "Repr-Digest", "/asset?objectKey=", "/assets",
		"Upload-Draft-Interop-Version: 6", "curl -s -I", "-X PATCH", "application/partial-upload"} {
		require.Contains(t, block, step)
	}

	out, _ := runTryIt(t, block)
	require.Contains(t, out, `"collection":"temperature-readings"`, "the snapshot's envelope")
	require.Equal(t, 3, strings.Count(out, `"status":200,"replayed":false`), "every item of the batch applied: %s", out)
	require.NotContains(t, out, `"problem"`)
	require.Contains(t, out, `"status":"uploaded"`, "the upload's envelope names the file uploaded")
	require.Contains(t, out, "the file came back whole", "%s", out)
	require.Contains(t, out, "kept 100000 bytes", "the cut upload kept every byte sent: %s", out)
	require.Equal(t, 2, strings.Count(out, `"status":"uploaded"`), "the resumed upload's answer is the single PUT's: %s", out)
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "the resumed file came back whole"), "%s", out)
}
