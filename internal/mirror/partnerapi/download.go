package partnerapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ErrURLExpired asks the caller for a fresh list (a fresh signed URL).
var ErrURLExpired = errors.New("the signed URL has expired")

// StatusError is a download's answer other than 200.
type StatusError struct{ Status int }

func (e StatusError) Error() string { return "download answered " + strconv.Itoa(e.Status) }

// downloader fetches signed URLs. It never carries the API key: a signed
// URL is its own authorisation, and it may point at an object store.
var downloader = &http.Client{Timeout: 30 * time.Minute}

// Download fetches the file of a list's item into dst, trying up to
// three times with the client's backoff, and counts it. A signed URL
// answered 403 or 410 has expired (ErrURLExpired); dst only ever holds
// verified bytes.
func (c *Client) Download(ctx context.Context, it FileItem, dst string) (int64, error) {
	for attempt := 1; ; attempt++ {
		written, err := download(ctx, it, dst)
		if err == nil {
			c.count(func(st *Stats) { st.Downloads++ })
			return written, nil
		}
		var se StatusError
		switch {
		case errors.As(err, &se) && (se.Status == http.StatusForbidden || se.Status == http.StatusGone):
			return 0, ErrURLExpired // signed URLs answer 403 once expired
		case errors.As(err, &se) && se.Status < 500:
			return 0, err
		case attempt >= 3 || ctx.Err() != nil:
			return 0, err
		}
		if err := c.sleep(ctx, "download retry", c.backoff(attempt, 0)); err != nil {
			return 0, err
		}
	}
}

// download streams url into dst through a temporary file, checking the
// length and the digest before the rename, so dst only ever holds
// verified bytes.
func download(ctx context.Context, it FileItem, dst string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, it.URL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := downloader.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, StatusError{resp.StatusCode}
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".part-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, it.ByteLength+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if n != it.ByteLength {
		return 0, fmt.Errorf("got %d bytes, the list says %d", n, it.ByteLength)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != it.SHA256 {
		return 0, fmt.Errorf("the bytes' SHA-256 is %s, the list says %s", got, it.SHA256)
	}
	return n, os.Rename(tmp.Name(), dst)
}
