package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/blob"
)

// The S3 server of the tests is versitygw with its posix backend, a real
// S3 implementation (SigV4, checksums, multipart, presigned URLs), pinned
// in tests/tools/go.mod. It runs on loopback only, with these root
// credentials, which the service under test reads from the standard AWS
// environment variables like any deployment.
const (
	s3AccessKey = "foodsafe-test"
	s3SecretKey = "foodsafe-test-secret-key-0123456789"
	s3Region    = "us-east-1"
)

// setS3Environment gives the in-process service the AWS credentials of the
// test server and keeps the SDK from reading the developer's own AWS
// configuration or asking an instance metadata service.
func setS3Environment() {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           s3AccessKey,
		"AWS_SECRET_ACCESS_KEY":       s3SecretKey,
		"AWS_REGION":                  s3Region,
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		_ = os.Setenv(k, v)
	}
	_ = os.Unsetenv("AWS_PROFILE")
	_ = os.Unsetenv("AWS_SESSION_TOKEN")
}

// versitygwBinary is the pinned versitygw, built once (toolBinary).
func versitygwBinary(t testing.TB) string {
	t.Helper()
	return toolBinary(t, "tools", "versitygw", "github.com/versity/versitygw/cmd/versitygw")
}

// builtTool is one program toolBinary builds, once per test binary.
type builtTool struct {
	once sync.Once
	path string
	err  error
}

// builtTools holds a *builtTool per module directory.
var builtTools sync.Map

// toolBinary builds pkg of the tools module in dir (under tests/) once
// into the user's cache directory, keyed by that module's go.sum, so later
// runs start at once; a first build takes a few minutes (modules plus
// compilation). The S3 server and the trace receiver come from here.
func toolBinary(t testing.TB, dir, name, pkg string) string {
	t.Helper()
	v, _ := builtTools.LoadOrStore(dir, &builtTool{})
	b := v.(*builtTool)
	b.once.Do(func() {
		sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil {
			b.err = err
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		h := sha256.Sum256(sum)
		out := filepath.Join(cache, "foodsafe-tests", name+"-"+hex.EncodeToString(h[:6]))
		b.path = filepath.Join(out, name)
		if _, err := os.Stat(b.path); err == nil {
			return
		}
		if b.err = os.MkdirAll(out, 0o755); b.err != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "tests: building %s into %s (once; takes a few minutes)\n", name, out)
		// Build beside the target and rename: concurrent runs never see a
		// half-written binary.
		tmp := b.path + ".tmp-" + rand.Text()[:8]
		cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, pkg)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", name, err, out)
			_ = os.Remove(tmp)
			return
		}
		b.err = os.Rename(tmp, b.path)
	})
	require.NoError(t, b.err)
	return b.path
}

// s3Server is one versitygw process on a loopback port, storing into its
// own directory. Stop and Start simulate an outage and the recovery.
type s3Server struct {
	t        testing.TB
	bin, dir string
	addr     string
	mu       sync.Mutex
	cmd      *exec.Cmd
	out      *bytes.Buffer
}

// Endpoint is the server's URL.
func (s *s3Server) Endpoint() string { return "http://" + s.addr }

// startS3 runs a new versitygw, stopped when the test ends.
func startS3(t testing.TB) *s3Server {
	t.Helper()
	s := newS3Server(t, t.TempDir())
	t.Cleanup(s.Stop)
	return s
}

func newS3Server(t testing.TB, dir string) *s3Server {
	s := &s3Server{t: t, bin: versitygwBinary(t), dir: dir, addr: freeLoopbackAddr(t)}
	require.NoError(t, s.start())
	return s
}

func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// Start (re)starts the server on its address and directory and returns
// once it accepts connections.
func (s *s3Server) Start() {
	s.t.Helper()
	require.NoError(s.t, s.start())
}

func (s *s3Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Flags, not the environment: versitygw also reads variables such as
	// LOGFILE or WEBHOOK, so it gets an empty environment. Every listener
	// is on loopback; the web UI, admin API and IAM services stay off.
	cmd := exec.Command(s.bin, "--access", s3AccessKey, "--secret", s3SecretKey, "--region", s3Region,
		"--port", s.addr, "--quiet", "posix", s.dir)
	cmd.Env = []string{"HOME=" + s.dir, "PATH=/usr/bin:/bin"}
	s.out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			_ = c.Close()
			go func() { <-exited }()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("versitygw exited at start (%v): %s", err, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("versitygw did not listen on %s within 30s: %s", s.addr, s.out.String())
		}
	}
}

// Stop kills the server; connections to it are refused until Start.
func (s *s3Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_, _ = s.cmd.Process.Wait()
	s.cmd = nil
}

var (
	sharedS3Once sync.Once
	sharedS3Srv  *s3Server
	sharedS3Err  error
	sharedS3Dir  string
)

// sharedS3 is one server for the whole package, each test in its own
// bucket; tests that stop their server start their own with startS3.
func sharedS3(t testing.TB) *s3Server {
	t.Helper()
	bin := versitygwBinary(t)
	sharedS3Once.Do(func() {
		sharedS3Dir, sharedS3Err = os.MkdirTemp("", "foodsafe-s3-")
		if sharedS3Err != nil {
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			sharedS3Err = err
			return
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		sharedS3Srv = &s3Server{t: t, bin: bin, dir: sharedS3Dir, addr: addr}
		sharedS3Err = sharedS3Srv.start()
	})
	require.NoError(t, sharedS3Err)
	return sharedS3Srv
}

// stopSharedS3 ends the package's server (from TestMain).
func stopSharedS3() {
	if sharedS3Srv != nil {
		sharedS3Srv.Stop()
	}
	if sharedS3Dir != "" {
		_ = os.RemoveAll(sharedS3Dir)
	}
}

// s3Client is a plain SDK client of the test server, for arranging and
// inspecting buckets independently of the service's own code.
func s3Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       s3Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s3AccessKey, s3SecretKey, ""),
	})
}

// newBucket creates a bucket of the test's own and returns the
// FOODSAFE_BLOB_URL of a prefix in it.
func newBucket(t testing.TB, srv *s3Server) string {
	t.Helper()
	name := "fs-" + strings.ToLower(rand.Text()[:16])
	_, err := s3Client(srv.Endpoint()).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	require.NoError(t, err)
	return "s3://" + name + "/files?endpoint=" + srv.Endpoint() + "&region=" + s3Region + "&path_style=true"
}

// withS3 stores the app's files in a new bucket of srv.
func withS3(srv *s3Server) appOption {
	return func(o *appOptions) { o.s3 = srv }
}

// backend is one file store the file tests run against.
type backend struct {
	name string
	s3   bool
}

var backends = []backend{{name: "filesystem"}, {name: "s3", s3: true}}

// newApp is newApp with its files on the backend.
func (b backend) newApp(t testing.TB, opts ...appOption) *app {
	if b.s3 {
		opts = append([]appOption{withS3(sharedS3(t))}, opts...)
	}
	return newApp(t, opts...)
}

// forEachBackend runs f once per file store, as parallel subtests.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// onS3 reports whether the app keeps its files in an object store.
func (a *app) onS3() bool { return a.cfg.BlobURL != "" }

// storedObjects lists everything the app's file store holds: files in the
// blob directory (temporary ones included), or every object under the
// bucket and every multipart upload not completed or aborted.
func (a *app) storedObjects() []string {
	a.t.Helper()
	if !a.onS3() {
		return a.storedBlobs()
	}
	loc, err := blob.ParseS3URL(a.cfg.BlobURL)
	require.NoError(a.t, err)
	c := s3Client(loc.Endpoint)
	ctx := context.Background()
	var out []string
	objs, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(loc.Bucket)})
	require.NoError(a.t, err)
	for _, o := range objs.Contents {
		out = append(out, aws.ToString(o.Key))
	}
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(loc.Bucket)})
	require.NoError(a.t, err)
	for _, u := range ups.Uploads {
		out = append(out, "multipart upload of "+aws.ToString(u.Key))
	}
	return out
}

// download GETs a download URL with no credentials: the service's own
// /v1/files route (held to the OpenAPI document) or the object store.
func (a *app) download(rawURL string, kv ...string) response {
	a.t.Helper()
	if !a.onS3() {
		return a.fetch(rawURL, kv...)
	}
	return fetchURL(a.t, http.MethodGet, rawURL, kv...)
}

// fetchURL sends one request to an absolute URL.
func fetchURL(t testing.TB, method, rawURL string, kv ...string) response {
	t.Helper()
	r, err := http.NewRequest(method, rawURL, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	return fetchRequest(t, r)
}

// fetchRequest sends r and reads the whole response.
func fetchRequest(t testing.TB, r *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(r)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}
