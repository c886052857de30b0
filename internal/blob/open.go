package blob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Settings choose and configure the store.
type Settings struct {
	// URL is FOODSAFE_BLOB_URL: empty for the filesystem store, or
	// s3://bucket[/prefix][?endpoint=URL&region=NAME&path_style=BOOL].
	URL string
	// Dir is FOODSAFE_BLOB_DIR, the filesystem store's directory.
	Dir string
	// Signer signs the filesystem store's /v1/files URLs.
	Signer *Signer
	// Transport, when not nil, wraps the S3 client's HTTP transport
	// (tracing's client spans).
	Transport func(http.RoundTripper) http.RoundTripper
}

// Open returns the configured store. An S3 store is checked before it is
// returned (the bucket must answer), so a bad setting stops the start.
func Open(ctx context.Context, s Settings) (Store, error) {
	if s.URL == "" {
		return NewFS(s.Dir, s.Signer)
	}
	loc, err := ParseS3URL(s.URL)
	if err != nil {
		return nil, err
	}
	return NewS3(ctx, loc, s.Transport)
}

// ParseS3URL reads s3://bucket/prefix?endpoint=...&region=...&path_style=true.
// Credentials never belong in it: they come from the AWS environment.
func ParseS3URL(raw string) (S3Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return S3Location{}, errors.New("not a URL: use s3://bucket/prefix?endpoint=...&region=...&path_style=true, or leave it empty for the filesystem store")
	}
	if u.Scheme != "s3" {
		return S3Location{}, fmt.Errorf("unknown scheme %q: only s3:// is supported (leave it empty for the filesystem store in FOODSAFE_BLOB_DIR)", u.Scheme)
	}
	if u.User != nil {
		return S3Location{}, errors.New("must not carry credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or an instance role) instead")
	}
	if u.Host == "" {
		return S3Location{}, errors.New("names no bucket: use s3://bucket/prefix")
	}
	loc := S3Location{Bucket: u.Host}
	if p := strings.Trim(u.Path, "/"); p != "" {
		loc.Prefix = p + "/"
	}
	for name, vals := range u.Query() {
		if len(vals) != 1 {
			return S3Location{}, fmt.Errorf("query parameter %q must appear once", name)
		}
		v := vals[0]
		switch name {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil {
				return S3Location{}, errors.New("endpoint must be an http:// or https:// URL without credentials")
			}
			loc.Endpoint = v
		case "region":
			loc.Region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return S3Location{}, fmt.Errorf("path_style must be true or false, got %q", v)
			}
			loc.PathStyle = b
		default:
			return S3Location{}, fmt.Errorf("unknown query parameter %q: only endpoint, region and path_style are read", name)
		}
	}
	return loc, nil
}

// Describe names the configured store for logs: scheme, bucket, prefix and
// endpoint only, so nothing secret reaches a log line even when the URL
// wrongly carries some (it is refused at start anyway).
func Describe(s Settings) string {
	if s.URL == "" {
		return "directory " + s.Dir
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "(unparsable FOODSAFE_BLOB_URL)"
	}
	out := u.Scheme + "://" + u.Host + u.Path
	if e, err := url.Parse(u.Query().Get("endpoint")); err == nil && e.Host != "" {
		out += " at " + e.Scheme + "://" + e.Host + e.Path
	}
	return out
}
