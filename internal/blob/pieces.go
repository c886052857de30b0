package blob

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Pieces keep the bytes of resumable uploads in progress, where any
// replica can resume them: under partial/<upload>/ in the directory or
// the bucket, next to (never under) the content addresses. An upload is a
// list of pieces, one or more per request that appended to it, each
// written whole and durably before the caller commits it (records its
// name and length in the database): a piece written but never committed
// (a crash, or a stale request that lost the race for an offset) is not
// part of the upload and goes with it. Pieces rather than one growing
// file or an S3 multipart upload: S3 parts must be at least 5 MiB except
// the last, and a device on a bad network sends less between two cuts;
// and two replicas appending at once (a stale request and its
// resumption) never write the same bytes, so the database alone decides
// which piece counts. Completion reads the pieces in order through Put,
// the same path and verification as a single upload.
type Pieces interface {
	// PieceAppend reads r, at most max bytes, into new pieces of upload,
	// calling commit with each piece once it is durably written (a
	// commit error stops the append; one wrapping ErrNotCommitted, which
	// says the piece is surely not recorded, also deletes the piece, best
	// effort). It returns the bytes committed and
	// the first failure: a failure to read r (a cut connection) still
	// commits the bytes read before it. ErrTooLarge when r holds more
	// than max (nothing of the excess is committed).
	PieceAppend(ctx context.Context, upload string, r io.Reader, max int64, commit func(piece string, n int64) error) (int64, error)
	// PieceOpen reads the committed pieces of upload in order.
	PieceOpen(ctx context.Context, upload string, pieces []string) io.ReadCloser
	// PieceDiscard deletes every piece of upload, committed or not;
	// pieces already gone are not an error.
	PieceDiscard(ctx context.Context, upload string) error
}

// ValidUpload reports an upload name safe in a path or object key: 1 to
// 64 lowercase letters and digits.
func ValidUpload(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'z') {
			return false
		}
	}
	return true
}

// pieceName is a fresh random name, unique within its upload.
func pieceName() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func partialKey(upload string) string { return "partial/" + upload + "/" }

// ErrNotCommitted is wrapped by a commit error that surely recorded
// nothing (the upload moved on or is gone), so the piece is deleted at
// once. Any other commit error may have recorded it (a connection lost
// after the database applied the update): that piece stays, and goes
// with its upload.
var ErrNotCommitted = errors.New("blob: piece not committed")

// readErr remembers the first failure of the client's stream (not its
// end), which buffering readers fold into io.EOF.
type readErr struct {
	r   io.Reader
	n   int64
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.n += int64(n)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

func (f *FS) pieceDir(upload string) string {
	return filepath.Join(f.Dir, filepath.FromSlash(partialKey(upload)))
}

// PieceAppend writes one piece per call, fsynced before it is committed.
func (f *FS) PieceAppend(_ context.Context, upload string, r io.Reader, max int64, commit func(string, int64) error) (int64, error) {
	if !ValidUpload(upload) {
		return 0, fmt.Errorf("blob: %q is not an upload name", upload)
	}
	dir := f.pieceDir(upload)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	name := pieceName()
	file, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	closed, keep := false, false
	defer func() {
		if !closed {
			file.Close()
		}
		if !keep {
			os.Remove(file.Name())
		}
	}()
	src := &readErr{r: io.LimitReader(r, max+1)}
	n, err := io.Copy(storageWriter{file}, src)
	var se storageError
	switch {
	case errors.As(err, &se):
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, se.err)
	case n > max:
		return 0, ErrTooLarge
	case n == 0:
		return 0, err
	}
	if serr := file.Sync(); serr != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, serr)
	}
	closed = true
	if serr := file.Close(); serr != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, serr)
	}
	if serr := syncDir(dir); serr != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, serr)
	}
	cerr := commit(name, n)
	keep = cerr == nil || !errors.Is(cerr, ErrNotCommitted)
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// PieceOpen opens each piece as the reading reaches it.
func (f *FS) PieceOpen(_ context.Context, upload string, pieces []string) io.ReadCloser {
	return &pieceReader{pieces: pieces, open: func(p string) (io.ReadCloser, error) {
		if !ValidUpload(upload) || !ValidUpload(p) {
			return nil, fmt.Errorf("blob: bad piece %q of %q", p, upload)
		}
		file, err := os.Open(filepath.Join(f.pieceDir(upload), p))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return file, nil
	}}
}

// PieceDiscard removes the upload's directory.
func (f *FS) PieceDiscard(_ context.Context, upload string) error {
	if !ValidUpload(upload) {
		return fmt.Errorf("blob: %q is not an upload name", upload)
	}
	if err := os.RemoveAll(f.pieceDir(upload)); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// pieceReader concatenates pieces, opening one at a time.
type pieceReader struct {
	pieces []string
	open   func(string) (io.ReadCloser, error)
	cur    io.ReadCloser
}

func (p *pieceReader) Read(b []byte) (int, error) {
	for {
		if p.cur == nil {
			if len(p.pieces) == 0 {
				return 0, io.EOF
			}
			rc, err := p.open(p.pieces[0])
			if err != nil {
				return 0, err
			}
			p.cur, p.pieces = rc, p.pieces[1:]
		}
		n, err := p.cur.Read(b)
		if err == io.EOF {
			p.cur.Close()
			p.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return n, err
	}
}

func (p *pieceReader) Close() error {
	if p.cur != nil {
		return p.cur.Close()
	}
	return nil
}

// PieceAppend buffers up to 5 MiB (as Put's multipart parts, and only as
// far as bytes arrive) and puts each full buffer, and what is left at the
// end or at a cut, as one object: a cut loses nothing that arrived.
func (s *S3) PieceAppend(ctx context.Context, upload string, r io.Reader, max int64, commit func(string, int64) error) (int64, error) {
	if !ValidUpload(upload) {
		return 0, fmt.Errorf("blob: %q is not an upload name", upload)
	}
	src := &readErr{r: io.LimitReader(r, max+1)}
	var buf partBuffer
	var total int64
	for {
		ferr := buf.fill(src)
		if src.n > max {
			return total, ErrTooLarge
		}
		// Any failure of fill (a read deadline from the idle timeout or
		// from a newer request preempting this one, a reset connection)
		// still puts and commits what arrived before it: the device
		// resumes from there instead of resending up to 5 MiB.
		if buf.n > 0 {
			name := pieceName()
			sum := buf.sum()
			_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(s.loc.Bucket), Key: aws.String(s.loc.Prefix + partialKey(upload) + name),
				Body: buf.reader(), ContentLength: aws.Int64(buf.n),
				ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
			}, payloadHash(hex.EncodeToString(sum[:])))
			if err != nil {
				return total, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			if err := commit(name, buf.n); err != nil {
				if errors.Is(err, ErrNotCommitted) {
					_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.loc.Bucket),
						Key: aws.String(s.loc.Prefix + partialKey(upload) + name)})
				}
				return total, err
			}
			total += buf.n
			buf.reset()
		}
		if ferr == io.EOF {
			return total, src.err
		}
		if ferr != nil {
			return total, ferr
		}
	}
}

// PieceOpen gets each piece as the reading reaches it.
func (s *S3) PieceOpen(ctx context.Context, upload string, pieces []string) io.ReadCloser {
	return &pieceReader{pieces: pieces, open: func(p string) (io.ReadCloser, error) {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.loc.Bucket),
			Key: aws.String(s.loc.Prefix + partialKey(upload) + p)})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return out.Body, nil
	}}
}

// PieceDiscard lists the upload's prefix and deletes what it holds, one
// object at a time (some S3-compatible stores lack DeleteObjects).
func (s *S3) PieceDiscard(ctx context.Context, upload string) error {
	if !ValidUpload(upload) {
		return fmt.Errorf("blob: %q is not an upload name", upload)
	}
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.loc.Bucket),
		Prefix: aws.String(s.loc.Prefix + partialKey(upload))})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		for _, o := range page.Contents {
			_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.loc.Bucket), Key: o.Key})
			var re *awshttp.ResponseError
			if err != nil && !(errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound) {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
		}
	}
	return nil
}

var (
	_ Pieces = (*FS)(nil)
	_ Pieces = (*S3)(nil)
)
