package mirror

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// fileItem is an entry of the assets endpoint and of the delivery image
// list (spec 2.7).
type fileItem struct {
	ID           string `json:"id"`
	ContentType  string `json:"contentType"`
	ByteLength   int64  `json:"byteLength"`
	SHA256       string `json:"sha256"`
	URL          string `json:"url"`
	URLExpiresAt string `json:"urlExpiresAt"`
}

type fileList struct {
	Data []fileItem `json:"data"`
}

// errURLExpired asks the caller for a fresh list (a fresh signed URL).
var errURLExpired = errors.New("the signed URL has expired")

// downloader fetches signed URLs. It never carries the API key: a signed
// URL is its own authorisation, and it may point at an object store.
var downloader = &http.Client{Timeout: 30 * time.Minute}

// syncFiles downloads the files of a restaurant's mirrored records and
// deliveries that the target does not have yet, each once by digest. The
// work is found in the target (records whose asset is uploaded with a
// digest not in files; deliveries with images not yet fetched), so a run
// that stopped half-way picks it up again.
func (s *Syncer) syncFiles(ctx context.Context, p plan) (n, bytes int64, err error) {
	// One file that cannot be fetched (a digest that does not match, a
	// server error) does not hold back the others; a refused key or an
	// interruption stops them all.
	var errs []error
	failed := func(err error) error {
		switch {
		case err == nil:
			return nil
		case IsStatus(err, 401) || ctx.Err() != nil:
			return s.fatalIfUnauthorized(err)
		}
		s.log.Warn("a file could not be mirrored; the next run tries again", "restaurant", p.restaurant, "error", err.Error())
		errs = append(errs, err)
		return nil
	}
	for _, coll := range fileCollections {
		if !slices.Contains(p.readable, coll) {
			continue
		}
		ids, err := s.t.recordsMissingFiles(ctx, p.restaurant, coll)
		if err != nil {
			return n, bytes, err
		}
		for _, id := range ids {
			path := "/v1/restaurants/" + url.PathEscape(p.restaurant) + "/collections/" + url.PathEscape(coll) + "/records/" + url.PathEscape(id) + "/assets"
			k, b, err := s.fetchListed(ctx, p.restaurant, "asset", coll+"/"+id, path, -1)
			n, bytes = n+k, bytes+b
			if IsStatus(err, 404) {
				continue // deleted since it was mirrored; the next sync brings the tombstone
			}
			if stop := failed(err); stop != nil {
				return n, bytes, stop
			}
		}
	}
	if p.deliveries && p.images {
		pending, err := s.t.deliveriesMissingImages(ctx, p.restaurant)
		if err != nil {
			return n, bytes, err
		}
		for _, d := range pending {
			path := "/v1/restaurants/" + url.PathEscape(p.restaurant) + "/deliveries/" + url.PathEscape(d.id) + "/images"
			k, b, err := s.fetchListed(ctx, p.restaurant, "delivery-image", d.id, path, d.imageCount)
			n, bytes = n+k, bytes+b
			if stop := failed(err); stop != nil {
				return n, bytes, stop
			}
		}
	}
	return n, bytes, errors.Join(errs...)
}

// fetchListed lists the files at path and downloads each digest the target
// lacks (every file the list returns), asking for a fresh list once when a
// signed URL has expired. For delivery images (want >= 0, the delivery's
// imageCount) the delivery is marked done once the list held at least want
// images and all were stored; a delivery listed with fewer is listed again
// by the next run.
func (s *Syncer) fetchListed(ctx context.Context, restaurant, source, parent, path string, want int64) (n, bytes int64, err error) {
	for attempt := 1; ; attempt++ {
		var list fileList
		if err := s.get(ctx, path, nil, &list); err != nil {
			return n, bytes, err
		}
		expired := false
		var errs []error // files that failed; the others of the list go on
		for _, it := range list.Data {
			k, err := s.fetchOne(ctx, it)
			switch {
			case errors.Is(err, errURLExpired) && attempt == 1:
				expired = true
				continue
			case ctx.Err() != nil:
				return n, bytes, ctx.Err()
			case err != nil:
				errs = append(errs, fmt.Errorf("%s %s file %q: %w", source, parent, it.ID, err))
				continue
			}
			if k > 0 {
				n, bytes = n+1, bytes+k
			}
			if err := s.t.linkFile(ctx, restaurant, source, parent, it); err != nil {
				return n, bytes, err
			}
		}
		if expired {
			s.log.Info("a signed URL expired; asking for fresh ones", "restaurant", restaurant, "source", source, "parent", parent)
			continue
		}
		if len(errs) > 0 {
			return n, bytes, errors.Join(errs...)
		}
		if want >= 0 && int64(len(list.Data)) >= want {
			return n, bytes, s.t.markImagesSynced(ctx, restaurant, parent)
		}
		return n, bytes, nil
	}
}

// fetchOne downloads one file into the content-addressed directory unless
// the target already has its digest, verifying length and SHA-256. It
// returns the bytes written (0 when it was there already).
func (s *Syncer) fetchOne(ctx context.Context, it fileItem) (int64, error) {
	if !sha256Hex.MatchString(it.SHA256) {
		return 0, fmt.Errorf("malformed sha256 %q", it.SHA256)
	}
	have, err := s.t.hasFile(ctx, it.SHA256)
	if err != nil || have {
		return 0, err
	}
	if exp, err := strconv.ParseInt(it.URLExpiresAt, 10, 64); err == nil && time.UnixMilli(exp).Before(s.o.Now().Add(5*time.Second)) {
		return 0, errURLExpired
	}
	rel := filepath.Join("sha256", it.SHA256[:2], it.SHA256)
	dst := filepath.Join(s.o.FilesDir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	written, err := s.download(ctx, it, dst)
	s.tally(ctx, err)
	if err != nil {
		return 0, err
	}
	s.c.count(func(st *Stats) { st.Downloads++ })
	return written, s.t.putFile(ctx, it, rel)
}

// download fetches a file into dst, trying up to three times.
func (s *Syncer) download(ctx context.Context, it fileItem, dst string) (int64, error) {
	for attempt := 1; ; attempt++ {
		written, err := download(ctx, it, dst)
		if err == nil {
			return written, nil
		}
		var se statusError
		switch {
		case errors.As(err, &se) && (se.status == http.StatusForbidden || se.status == http.StatusGone):
			return 0, errURLExpired // signed URLs answer 403 once expired
		case errors.As(err, &se) && se.status < 500:
			return 0, err
		case attempt >= 3 || ctx.Err() != nil:
			return 0, err
		}
		if err := s.c.sleep(ctx, "download retry", s.c.backoff(attempt, 0)); err != nil {
			return 0, err
		}
	}
}

type statusError struct{ status int }

func (e statusError) Error() string { return "download answered " + strconv.Itoa(e.status) }

// download streams url into dst through a temporary file, checking the
// length and the digest before the rename, so dst only ever holds
// verified bytes.
func download(ctx context.Context, it fileItem, dst string) (int64, error) {
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
		return 0, statusError{resp.StatusCode}
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

// recordsMissingFiles are the live records of a collection whose uploaded
// asset's digest the target has not stored.
func (t *Target) recordsMissingFiles(ctx context.Context, restaurant, coll string) ([]string, error) {
	tbl := quotedTable(coll)
	return t.strings(ctx, `SELECT id FROM `+tbl+` WHERE restaurant_id = ? AND NOT deleted AND asset_sha256 IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM files WHERE files.sha256 = `+tbl+`.asset_sha256) ORDER BY id`, restaurant)
}

type pendingDelivery struct {
	id         string
	imageCount int64
}

// deliveriesMissingImages are the deliveries whose photographs have not
// all been fetched: those never listed, whatever their imageCount (the
// provider's own figure, which the images may outnumber), and those
// listed with fewer images than it.
func (t *Target) deliveriesMissingImages(ctx context.Context, restaurant string) ([]pendingDelivery, error) {
	rows, err := t.db.QueryContext(ctx, t.dialect.q(`SELECT id, image_count FROM deliveries WHERE restaurant_id = ? AND NOT images_synced ORDER BY id`), restaurant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pendingDelivery
	for rows.Next() {
		var d pendingDelivery
		if err := rows.Scan(&d.id, &d.imageCount); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

func (t *Target) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := t.db.QueryContext(ctx, t.dialect.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (t *Target) hasFile(ctx context.Context, sha string) (bool, error) {
	var one int
	err := t.db.QueryRowContext(ctx, t.dialect.q(`SELECT 1 FROM files WHERE sha256 = ?`), sha).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (t *Target) putFile(ctx context.Context, it fileItem, rel string) error {
	_, err := t.db.ExecContext(ctx, t.dialect.q(`INSERT INTO files (sha256, content_type, byte_length, path, downloaded_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (sha256) DO NOTHING`), it.SHA256, it.ContentType, it.ByteLength, rel, nowMillis())
	return err
}

func (t *Target) linkFile(ctx context.Context, restaurant, source, parent string, it fileItem) error {
	_, err := t.db.ExecContext(ctx, t.dialect.q(`INSERT INTO file_links (restaurant_id, source, parent, item_id, sha256, content_type) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (restaurant_id, source, parent, item_id) DO UPDATE SET sha256 = excluded.sha256, content_type = excluded.content_type`),
		restaurant, source, parent, it.ID, it.SHA256, it.ContentType)
	return err
}

func (t *Target) markImagesSynced(ctx context.Context, restaurant, deliveryID string) error {
	_, err := t.db.ExecContext(ctx, t.dialect.q(`UPDATE deliveries SET images_synced = ? WHERE restaurant_id = ? AND id = ?`), true, restaurant, deliveryID)
	return err
}
