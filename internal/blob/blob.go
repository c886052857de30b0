// Package blob keeps the bytes of uploaded files (record assets and
// delivery images) and makes the time-limited URLs that download them.
//
// Store is the seam, with two implementations chosen by configuration
// (Open): FS writes content-addressed files atomically and signs URLs
// served by this service's /v1/files route; S3 puts objects in any
// S3-compatible bucket and hands out presigned GET URLs, so the process
// keeps no state of its own.
//
// Both address an object by its digest alone (sha256/<2 hex>/<64 hex>
// under the directory or the bucket prefix), so a garbage collector can
// list and delete by digest on either backend.
package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/foodsafe/foodsafe/internal/telemetry/span"
)

// Errors of Put; callers map them to 400, 413 and 503.
var (
	ErrDigestMismatch = errors.New("the bytes do not match the announced SHA-256 digest")
	ErrTooLarge       = errors.New("the upload exceeds the size limit")
	// ErrUnavailable wraps every failure of the storage itself (an
	// unreachable or failing object store; a read-only, full or missing
	// directory), as opposed to a failure reading the client's bytes:
	// nothing was stored, it is the operator's problem, a retry may succeed.
	ErrUnavailable = errors.New("file storage unavailable")
)

// Object describes stored bytes.
type Object struct {
	SHA256 string // 64 lowercase hex characters
	Size   int64
}

// Store keeps bytes by SHA-256 and hands out download URLs.
type Store interface {
	// Put streams r into storage while hashing it; size is the announced
	// length, -1 when unknown. Unless the digest equals want and the size
	// is at most maxBytes, nothing is visible under the content address.
	// Storing bytes already present is harmless.
	Put(ctx context.Context, r io.Reader, size int64, want [sha256.Size]byte, maxBytes int64) (Object, error)
	// DownloadURL returns a URL that downloads the object with no other
	// credential, and the instant it stops working.
	DownloadURL(ctx context.Context, d Download) (string, time.Time, error)
	// Ping reports whether the storage can be used now (readiness).
	Ping(ctx context.Context) error
	// Delete removes the bytes of a digest; bytes already gone are not an
	// error. Only the blob collector calls it (store.BlobCollect says
	// when that is safe).
	Delete(ctx context.Context, sha string) error
	// Pieces keep resumable uploads in progress.
	Pieces
}

// Download asks for one download URL.
type Download struct {
	// BaseURL is this service's public base, for stores it serves itself.
	BaseURL string
	// Scope names the restaurant the download is made for.
	Scope       string
	Object      Object
	ContentType string
	// SignedAt and Lifetime bound the URL's validity.
	SignedAt time.Time
	Lifetime time.Duration
}

// FS stores objects as files named by their SHA-256 under Dir.
type FS struct {
	Dir    string
	Signer *Signer
}

// NewFS prepares dir (created if missing) for storage.
func NewFS(dir string, signer *Signer) (*FS, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o750); err != nil {
		return nil, fmt.Errorf("blob directory: %w", err)
	}
	return &FS{Dir: dir, Signer: signer}, nil
}

func (f *FS) path(sha string) string {
	return filepath.Join(f.Dir, filepath.FromSlash(contentKey(sha)))
}

// contentKey is the content address of a digest on every backend:
// sha256/<first 2 hex>/<64 hex>. The fan-out keeps directories small on
// the filesystem and on posix-backed S3 gateways.
func contentKey(sha string) string {
	return "sha256/" + sha[:2] + "/" + sha
}

// Put writes to a temporary file, fsyncs it, verifies the digest and
// renames it into place: a reader never sees a partial or unverified file,
// and a crash leaves only a temporary file behind.
func (f *FS) Put(ctx context.Context, r io.Reader, _ int64, want [sha256.Size]byte, maxBytes int64) (obj Object, err error) {
	ctx, sp := span.Start(ctx, "FS.Put")
	defer func() { tracePut(sp, obj, err) }()
	obj, err = f.put(ctx, r, want, maxBytes)
	var se storageError
	if errors.As(err, &se) {
		return obj, fmt.Errorf("%w: %w", ErrUnavailable, se.err)
	}
	return obj, err
}

// tracePut ends the span of a Put (the client's bytes read, verified and
// stored) with the bytes stored or the failure.
func tracePut(sp trace.Span, obj Object, err error) {
	if err == nil && sp.IsRecording() {
		sp.SetAttributes(attribute.Int64("foodsafe.file.bytes", obj.Size))
	}
	span.Fail(sp, err)
	sp.End()
}

// storageError marks a failure of the file system, not of the reader.
type storageError struct{ err error }

func (e storageError) Error() string { return e.err.Error() }

// storageWriter tags write failures as the storage's.
type storageWriter struct{ w io.Writer }

func (s storageWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		err = storageError{err}
	}
	return n, err
}

func (f *FS) put(ctx context.Context, r io.Reader, want [sha256.Size]byte, maxBytes int64) (Object, error) {
	tmp, err := os.CreateTemp(filepath.Join(f.Dir, "tmp"), "upload-*")
	if err != nil {
		return Object{}, storageError{err}
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(storageWriter{tmp}, h), io.LimitReader(ctxReader{ctx, r}, maxBytes+1))
	if err != nil {
		return Object{}, err
	}
	if n > maxBytes {
		return Object{}, ErrTooLarge
	}
	var got [sha256.Size]byte
	copy(got[:], h.Sum(nil))
	if got != want {
		return Object{}, ErrDigestMismatch
	}
	obj := Object{SHA256: hex.EncodeToString(got[:]), Size: n}
	if err := tmp.Sync(); err != nil {
		return Object{}, storageError{err}
	}
	if err := tmp.Close(); err != nil {
		return Object{}, storageError{err}
	}
	final := f.path(obj.SHA256)
	if err := os.MkdirAll(filepath.Dir(final), 0o750); err != nil {
		return Object{}, storageError{err}
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return Object{}, storageError{err}
	}
	keep = true
	if err := syncDir(filepath.Dir(final)); err != nil {
		return Object{}, storageError{err}
	}
	return obj, nil
}

// Delete removes the file of sha.
func (f *FS) Delete(_ context.Context, sha string) error {
	if !ValidSHA256(sha) {
		return fmt.Errorf("blob: delete: %q is not a SHA-256 digest", sha)
	}
	if err := os.Remove(f.path(sha)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Open returns the stored file of sha for serving.
func (f *FS) Open(sha string) (*os.File, error) {
	if !ValidSHA256(sha) {
		return nil, os.ErrNotExist
	}
	return os.Open(f.path(sha))
}

// DownloadURL is a URL of this service's /v1/files route, signed with the
// URL key; scope, the restaurant, is in the path for the audit trail.
func (f *FS) DownloadURL(_ context.Context, d Download) (string, time.Time, error) {
	expires := d.SignedAt.Add(d.Lifetime)
	p := FilesPath(d.Scope, d.Object.SHA256)
	exp := strconv.FormatInt(expires.UnixMilli(), 10)
	q := url.Values{"type": {d.ContentType}, "expires": {exp}, "signature": {f.Signer.Sign(p, d.ContentType, exp)}}
	return d.BaseURL + p + "?" + q.Encode(), expires, nil
}

// Ping reports whether uploads can be written: the staging directory
// exists, is a directory and is writable (a read-only or vanished file
// system fails here, without writing anything).
func (f *FS) Ping(context.Context) error {
	dir := filepath.Join(f.Dir, "tmp")
	st, err := os.Stat(dir)
	if err == nil && !st.IsDir() {
		err = fmt.Errorf("%s is not a directory", dir)
	}
	if err == nil {
		err = syscall.Access(dir, 2) // W_OK
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// FilesPath is the path of a download: /v1/files/{scope}/{sha256}.
func FilesPath(scope, sha string) string {
	return "/v1/files/" + url.PathEscape(scope) + "/" + sha
}

// ValidSHA256 reports 64 lowercase hex characters.
func ValidSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

// Signer makes and checks the HMAC-SHA256 signatures of download URLs.
type Signer struct{ key []byte }

// NewSigner signs with key (FOODSAFE_URL_KEY).
func NewSigner(key []byte) *Signer { return &Signer{key: key} }

// Sign covers the path, the content type and the expiry: changing any
// character of the URL invalidates it.
func (s *Signer) Sign(path, contentType, expires string) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "GET\n%s\n%s\n%s", path, contentType, expires)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify: a URL this service signed whose time is up, and one
// it did not sign as it stands (altered, or a part missing).
var (
	ErrURLExpired   = errors.New("the signed URL has expired")
	ErrURLSignature = errors.New("the URL's signature does not match it")
)

// Verify checks a signature in constant time and the expiry against now.
func (s *Signer) Verify(path, contentType, expires, signature string, now time.Time) error {
	want := s.Sign(path, contentType, expires)
	if !hmac.Equal([]byte(want), []byte(signature)) {
		return ErrURLSignature
	}
	ms, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return ErrURLSignature // never signed so
	}
	if now.UnixMilli() >= ms {
		return ErrURLExpired
	}
	return nil
}

// ctxReader stops a copy when the request is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

var _ Store = (*FS)(nil)
