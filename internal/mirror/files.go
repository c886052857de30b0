package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// fetcher downloads the files of a restaurant's mirrored records and
// deliveries, each once by digest, verified.
type fetcher struct{ *session }

// restaurant downloads the files of a restaurant's mirrored records and
// deliveries that the target does not have yet, each once by digest. The
// work is found in the target (records whose asset is uploaded with a
// digest not in files; deliveries with images not yet fetched), so a run
// that stopped half-way picks it up again.
func (s fetcher) restaurant(ctx context.Context, p plan) (n, bytes int64, err error) {
	// One file that cannot be fetched (a digest that does not match, a
	// server error) does not hold back the others; a refused key or an
	// interruption stops them all.
	var errs []error
	failed := func(err error) error {
		switch {
		case err == nil:
			return nil
		case partnerapi.IsStatus(err, 401) || ctx.Err() != nil:
			return fatalIfUnauthorized(err)
		}
		s.log.Warn("a file could not be mirrored; the next run tries again", "restaurant", p.restaurant, "error", err.Error())
		errs = append(errs, err)
		return nil
	}
	for _, coll := range fileCollections {
		if !slices.Contains(p.readable, coll) {
			continue
		}
		ids, err := s.t.Files.MissingAssets(ctx, p.restaurant, coll)
		if err != nil {
			return n, bytes, err
		}
		for _, id := range ids {
			path := "/v1/restaurants/" + url.PathEscape(p.restaurant) + "/collections/" + url.PathEscape(coll) + "/records/" + url.PathEscape(id) + "/assets"
			k, b, err := s.fetchListed(ctx, p.restaurant, "asset", coll+"/"+id, path, -1)
			n, bytes = n+k, bytes+b
			if partnerapi.IsStatus(err, 404) {
				continue // deleted since it was mirrored; the next sync brings the tombstone
			}
			if stop := failed(err); stop != nil {
				return n, bytes, stop
			}
		}
	}
	if p.deliveries && p.images {
		pending, err := s.t.Files.MissingImages(ctx, p.restaurant)
		if err != nil {
			return n, bytes, err
		}
		for _, d := range pending {
			path := "/v1/restaurants/" + url.PathEscape(p.restaurant) + "/deliveries/" + url.PathEscape(d.ID) + "/images"
			k, b, err := s.fetchListed(ctx, p.restaurant, "delivery-image", d.ID, path, d.ImageCount)
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
func (s fetcher) fetchListed(ctx context.Context, restaurant, source, parent, path string, want int64) (n, bytes int64, err error) {
	for attempt := 1; ; attempt++ {
		var list partnerapi.FileList
		if err := s.get(ctx, path, nil, &list); err != nil {
			return n, bytes, err
		}
		expired := false
		var errs []error // files that failed; the others of the list go on
		for _, it := range list.Data {
			k, err := s.fetchOne(ctx, it)
			switch {
			case errors.Is(err, partnerapi.ErrURLExpired) && attempt == 1:
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
			if err := s.t.Files.Link(ctx, restaurant, source, parent, fileOf(it)); err != nil {
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
			return n, bytes, s.t.Files.MarkImagesSynced(ctx, restaurant, parent)
		}
		return n, bytes, nil
	}
}

// fetchOne downloads one file into the content-addressed directory unless
// the target already has its digest, verifying length and SHA-256. It
// returns the bytes written (0 when it was there already).
func (s fetcher) fetchOne(ctx context.Context, it partnerapi.FileItem) (int64, error) {
	if !sha256Hex.MatchString(it.SHA256) {
		return 0, fmt.Errorf("malformed sha256 %q", it.SHA256)
	}
	have, err := s.t.Files.Has(ctx, it.SHA256)
	if err != nil || have {
		return 0, err
	}
	if exp, err := strconv.ParseInt(it.URLExpiresAt, 10, 64); err == nil && time.UnixMilli(exp).Before(s.o.Now().Add(5*time.Second)) {
		return 0, partnerapi.ErrURLExpired
	}
	rel := filepath.Join("sha256", it.SHA256[:2], it.SHA256)
	dst := filepath.Join(s.o.FilesDir, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	written, err := s.c.Download(ctx, it, dst)
	s.tally(ctx, err)
	if err != nil {
		return 0, err
	}
	return written, s.t.Files.Put(ctx, fileOf(it), rel)
}

// fileOf is a list's item as the target keeps it.
func fileOf(it partnerapi.FileItem) targets.File {
	return targets.File{ID: it.ID, SHA256: it.SHA256, ContentType: it.ContentType, ByteLength: it.ByteLength}
}
