package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/config"
)

func digestHeader(b []byte) string {
	d := sha256.Sum256(b)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(d[:]) + ":"
}

func sha256Hex(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// upload PUTs raw bytes with the given headers (Content-Type and
// Repr-Digest are only sent when non-empty).
func (a *app) upload(key, path, contentType, digest string, body []byte) response {
	a.t.Helper()
	return a.do(uploadReq(key, path, contentType, digest, body))
}

// uploadChunked is upload without a Content-Length (chunked transfer), as
// a device streaming a file of unknown length sends it.
func (a *app) uploadChunked(key, path, contentType, digest string, body []byte) response {
	a.t.Helper()
	r := uploadReq(key, path, contentType, digest, body)
	r.Chunked = true
	return a.do(r)
}

func uploadReq(key, path, contentType, digest string, body []byte) req {
	h := map[string]string{"Authorization": "Bearer " + key}
	if contentType != "" {
		h["Content-Type"] = contentType
	}
	if digest != "" {
		h["Repr-Digest"] = digest
	}
	return req{Method: http.MethodPut, Path: path, Header: h, Body: bytes.NewReader(body)}
}

// assetPath is the upload of the file objectKey of a record's asset.
func assetPath(restaurant, collection, record, objectKey string) string {
	return "/v1/ingest/restaurants/" + restaurant + "/collections/" + collection + "/records/" + record + "/asset?objectKey=" +
		url.QueryEscape(objectKey)
}

func assetsPath(restaurant, collection, record string) string {
	return recordsPath(restaurant, collection) + "/" + record + "/assets"
}

type fileItem struct {
	ID           string `json:"id"`
	ContentType  string `json:"contentType"`
	ByteLength   int64  `json:"byteLength"`
	SHA256       string `json:"sha256"`
	UploadedAt   string `json:"uploadedAt"`
	URL          string `json:"url"`
	URLExpiresAt string `json:"urlExpiresAt"`
}

func (a *app) fileList(key, path string) []fileItem {
	a.t.Helper()
	r := a.getAs(key, path)
	require.Equal(a.t, http.StatusOK, r.Status, "%s", r.Body)
	var out struct{ Data []fileItem }
	r.JSON(a.t, &out)
	return out.Data
}

// fetch GETs a signed URL with no credentials.
func (a *app) fetch(rawURL string, kv ...string) response {
	a.t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(a.t, err)
	return a.get(u.RequestURI(), kv...)
}

func picture(objectKey string, extra map[string]any) map[string]any {
	d := map[string]any{"timestamp": "1700000000000", "asset": map[string]any{"objectKey": objectKey, "status": "pending"}}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

func assetOf(t testing.TB, e envelopeDoc) map[string]any {
	t.Helper()
	var d struct{ Asset map[string]any }
	require.NoError(t, json.Unmarshal(e.Data, &d))
	return d.Asset
}

// storedBlobs lists the files in the app's blob directory.
func (a *app) storedBlobs() []string {
	a.t.Helper()
	var out []string
	require.NoError(a.t, filepath.WalkDir(a.cfg.BlobDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	}))
	return out
}

// Pending -> uploaded (spec 3): absent from the assets endpoint until the
// verified upload, then listed with a working signed URL whose bytes hash to
// the sha256; the record's next walk shows status uploaded.
func TestAssetPendingToUploaded(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAssetPendingToUploaded)
}

func testAssetPendingToUploaded(t *testing.T, b backend) {
	// The object store checks presigned URLs against its own clock.
	now := time.Now().Truncate(time.Second)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	a := b.newApp(t, withClock(func() time.Time { return now }), withConfig(func(c *config.Config) { c.BaseURL = "" }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-task-pictures:write", "cleaning-task-pictures:read"))
	const col = "cleaning-task-pictures"

	e := a.put(key, "r1", col, "pic-1", "m1", picture("photos/pic-1.jpg", nil))
	require.Equal(t, map[string]any{"objectKey": "photos/pic-1.jpg", "status": "pending"}, assetOf(t, e))
	require.Empty(t, a.fileList(key, assetsPath("r1", col, "pic-1")), "a pending asset is absent")

	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte("photo"), 5000)...)
	r := a.upload(key, assetPath("r1", col, "pic-1", "photos/pic-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var up struct{ Data envelopeDoc }
	r.JSON(t, &up)
	require.Equal(t, "2", up.Data.Sequence, "a new change in the record's stream")
	require.Equal(t, map[string]any{"objectKey": "photos/pic-1.jpg", "status": "uploaded", "contentType": "image/jpeg",
		"byteLength": float64(len(jpeg)), "sha256": sha256Hex(jpeg)}, assetOf(t, up.Data))

	items := a.fileList(key, assetsPath("r1", col, "pic-1"))
	require.Len(t, items, 1)
	it := items[0]
	require.Equal(t, "photos/pic-1.jpg", it.ID)
	require.Equal(t, "image/jpeg", it.ContentType)
	require.Equal(t, int64(len(jpeg)), it.ByteLength)
	require.Equal(t, sha256Hex(jpeg), it.SHA256)
	require.Equal(t, ms(now), it.UploadedAt)
	require.Equal(t, ms(now.Add(15*time.Minute)), it.URLExpiresAt, "valid 15 minutes")
	if a.onS3() {
		loc, err := blob.ParseS3URL(a.cfg.BlobURL)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(it.URL, loc.Endpoint+"/"+loc.Bucket+"/files/sha256/"+it.SHA256[:2]+"/"+it.SHA256+"?"), it.URL)
		u, err := url.Parse(it.URL)
		require.NoError(t, err)
		q := u.Query()
		require.Equal(t, "900", q.Get("X-Amz-Expires"))
		require.Equal(t, now.UTC().Format("20060102T150405Z"), q.Get("X-Amz-Date"), "signed at the service's clock")
		require.Equal(t, "image/jpeg", q.Get("response-content-type"))
		require.Equal(t, "attachment", q.Get("response-content-disposition"))
		require.NotContains(t, it.URL, s3SecretKey)
	} else {
		require.True(t, strings.HasPrefix(it.URL, a.srv.URL+"/v1/files/r1/"+it.SHA256+"?"), it.URL)
	}
	require.NotContains(t, it.URL, secretOf(key))

	got := a.download(it.URL) // no Authorization header
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, sha256Hex(jpeg), sha256Hex(got.Body))
	require.Equal(t, "image/jpeg", got.Header.Get("Content-Type"))
	require.Equal(t, "attachment", got.Header.Get("Content-Disposition"))
	if !a.onS3() {
		require.Equal(t, `"`+it.SHA256+`"`, got.Header.Get("ETag"))
	}

	walk := a.walkAll(key, "r1", col, 10)
	require.Len(t, walk, 1)
	require.Equal(t, "uploaded", assetOf(t, walk[0])["status"])

	// The device, unaware, re-sends its snapshot saying pending: the
	// service keeps what it verified.
	e = a.put(key, "r1", col, "pic-1", "m2", picture("photos/pic-1.jpg", map[string]any{"part": 1.5}))
	require.Equal(t, "uploaded", assetOf(t, e)["status"])
	require.Equal(t, sha256Hex(jpeg), assetOf(t, e)["sha256"])
	// A device claiming an upload the service never verified is pending.
	claim := picture("photos/other.jpg", nil)
	claim["asset"] = map[string]any{"objectKey": "photos/other.jpg", "status": "uploaded", "contentType": "image/png",
		"byteLength": 3, "sha256": strings.Repeat("a", 64)}
	e = a.put(key, "r1", col, "pic-2", "m3", claim)
	require.Equal(t, map[string]any{"objectKey": "photos/other.jpg", "status": "pending"}, assetOf(t, e))
	require.Empty(t, a.fileList(key, assetsPath("r1", col, "pic-2")))

	// Identical bytes again: idempotent.
	again := a.upload(key, assetPath("r1", col, "pic-1", "photos/pic-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(r.Body), string(again.Body))
	// Other bytes for the uploaded objectKey: conflict.
	other := []byte("another photo")
	requireProblem(t, a.upload(key, assetPath("r1", col, "pic-1", "photos/pic-1.jpg"), "image/jpeg", digestHeader(other), other), http.StatusConflict, "conflict")

	// Deleted: the assets list is empty, the record refuses uploads.
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", col, "pic-1", "m4", snapshot("r1", "pic-1", "m4", 1, true, nil)).Status)
	require.Empty(t, a.fileList(key, assetsPath("r1", col, "pic-1")))
	requireProblem(t, a.upload(key, assetPath("r1", col, "pic-1", "photos/pic-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg), http.StatusNotFound, "not-found")
}

// Digest mismatch, missing or malformed digest, oversize, wrong
// collection, unknown or deleted record: the right problem, and nothing
// stored (no blob, no change).
func TestAssetUploadRejects(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAssetUploadRejects)
}

func testAssetUploadRejects(t *testing.T, b backend) {
	a := b.newApp(t, withConfig(func(c *config.Config) { c.MaxAssetBytes = 1000 }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-task-pictures:write", "drive-files:write", "areas:write", "traceability-labels:read"))
	const col = "cleaning-task-pictures"
	a.put(key, "r1", col, "pic", "m1", picture("p.jpg", nil))
	a.put(key, "r1", "areas", "a1", "m2", area("Kitchen"))
	a.put(key, "r1", "drive-files", "doc", "m3", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1})
	a.put(key, "r1", col, "gone", "m4", picture("g.jpg", nil))
	require.Equal(t, http.StatusOK, a.ingest(key, "r1", col, "gone", "m5", snapshot("r1", "gone", "m5", 1, true, nil)).Status)
	var changes int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(), `SELECT count(*) FROM record_changes`).Scan(&changes))

	body := []byte("jpeg bytes")
	okDigest := digestHeader(body)
	cases := []struct {
		name, path, ct, digest string
		body                   []byte
		status                 int
		suffix, param          string
	}{
		{"digest mismatch", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", digestHeader([]byte("other")), body, 400, "invalid-request", "Repr-Digest"},
		{"missing digest", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", "", body, 400, "invalid-request", "Repr-Digest"},
		{"digest not a dictionary", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", "sha-256=abc", body, 400, "invalid-request", "Repr-Digest"},
		{"digest of another algorithm", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", "sha-512=:" + base64.StdEncoding.EncodeToString(make([]byte, 64)) + ":", body, 400, "invalid-request", "Repr-Digest"},
		{"digest too short", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", "sha-256=:AAAA:", body, 400, "invalid-request", "Repr-Digest"},
		{"hex digest", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", "sha-256=" + sha256Hex(body), body, 400, "invalid-request", "Repr-Digest"},
		{"missing content type", assetPath("r1", col, "pic", "p.jpg"), "", okDigest, body, 400, "invalid-request", "Content-Type"},
		{"bad content type", assetPath("r1", col, "pic", "p.jpg"), "not a type", okDigest, body, 400, "invalid-request", "Content-Type"},
		{"non-ASCII content type", assetPath("r1", col, "pic", "p.jpg"), "image/png; name=\"caf\xe9\"", okDigest, body, 400, "invalid-request", "Content-Type"},
		{"content type over 100", assetPath("r1", col, "pic", "p.jpg"), "image/png; x=" + strings.Repeat("a", 100), okDigest, body, 400, "invalid-request", "Content-Type"},
		{"oversize", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", digestHeader(make([]byte, 1001)), make([]byte, 1001), 413, "payload-too-large", ""},
		{"oversize, unknown length", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", digestHeader(make([]byte, 1001)), make([]byte, 1001), 413, "payload-too-large", "chunked"},
		{"digest mismatch, unknown length", assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", digestHeader([]byte("other")), body, 400, "invalid-request", "chunked"},
		{"collection without files", assetPath("r1", "areas", "a1", "a.jpg"), "image/jpeg", okDigest, body, 400, "invalid-request", "collection"},
		{"unknown collection", assetPath("r1", "fridges", "a1", "a.jpg"), "image/jpeg", okDigest, body, 400, "invalid-request", "collection"},
		{"unknown record", assetPath("r1", col, "nope", "x.jpg"), "image/jpeg", okDigest, body, 404, "not-found", ""},
		{"deleted record", assetPath("r1", col, "gone", "g.jpg"), "image/jpeg", okDigest, body, 404, "not-found", ""},
		{"record without asset", assetPath("r1", "drive-files", "doc", "k"), "application/pdf", okDigest, body, 409, "conflict", ""},
		{"no write scope", assetPath("r1", "traceability-labels", "x", "x.png"), "image/jpeg", okDigest, body, 403, "forbidden", ""},
		{"ungranted restaurant", assetPath("r2", col, "pic", "p.jpg"), "image/jpeg", okDigest, body, 404, "not-found", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := a.upload
			if tc.param == "chunked" {
				up, tc.param = a.uploadChunked, ""
			}
			p := requireProblem(t, up(key, tc.path, tc.ct, tc.digest, tc.body), tc.status, tc.suffix)
			if tc.param != "" {
				require.Equal(t, tc.param, p.Errors[0].Parameter)
			}
		})
	}
	require.Empty(t, a.storedObjects(), "nothing kept in blob storage")
	var after int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(), `SELECT count(*) FROM record_changes`).Scan(&after))
	require.Equal(t, changes, after, "no change written")

	// Exactly at the limit is fine.
	limit := bytes.Repeat([]byte("x"), 1000)
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", col, "pic", "p.jpg"), "image/jpeg", digestHeader(limit), limit).Status)
	require.Len(t, a.storedObjects(), 1)
}

// Files larger than one multipart part, with and without a
// Content-Length: stored whole and verified; a mismatch or an excess
// found only at the end of the stream leaves nothing in the store (no
// object, no unfinished multipart upload).
func TestLargeUploads(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		const limit = 12 << 20
		a := b.newApp(t, withConfig(func(c *config.Config) { c.MaxAssetBytes = limit }))
		a.addRestaurants("r1")
		key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
		file := func(id string) string {
			a.put(key, "r1", "drive-files", id, "m-"+id, map[string]any{"s3Key": "k", "name": id, "sizeBytes": 1,
				"asset": map[string]any{"objectKey": id, "status": "pending"}})
			return assetPath("r1", "drive-files", id, id)
		}
		big := make([]byte, 11<<20+12345)
		_, _ = rand.Read(big)
		tooBig := append(bytes.Clone(big), make([]byte, limit-len(big)+1)...)
		wrong := bytes.Clone(big)
		wrong[len(wrong)-1] ^= 1

		requireProblem(t, a.uploadChunked(key, file("over"), "application/pdf", digestHeader(tooBig), tooBig), http.StatusRequestEntityTooLarge, "payload-too-large")
		requireProblem(t, a.uploadChunked(key, file("bad"), "application/pdf", digestHeader(big), wrong), http.StatusBadRequest, "invalid-request")
		requireProblem(t, a.upload(key, file("bad2"), "application/pdf", digestHeader(big), wrong), http.StatusBadRequest, "invalid-request")
		require.Empty(t, a.storedObjects(), "nothing half-written is kept")

		for _, chunked := range []bool{true, false} {
			id := "ok-" + strconv.FormatBool(chunked)
			up := a.upload
			if chunked {
				up = a.uploadChunked
			}
			body := append([]byte(id), big...)
			r := up(key, file(id), "application/pdf", digestHeader(body), body)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			items := a.fileList(key, assetsPath("r1", "drive-files", id))
			require.Len(t, items, 1)
			got := a.download(items[0].URL)
			require.Equal(t, http.StatusOK, got.Status)
			require.Equal(t, sha256Hex(body), sha256Hex(got.Body))
		}
		require.Len(t, a.storedObjects(), 2)
	})
}

// Identical uploads racing: one change, all answered 200.
func TestAssetUploadRace(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAssetUploadRace)
}

func testAssetUploadRace(t *testing.T, b backend) {
	// Ten uploads of one key at once: above the default per-key cap, which
	// TestUploadSlots tests on its own.
	a := b.newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey = 10 }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "traceability-labels:write", "traceability-labels:read"))
	a.put(key, "r1", "traceability-labels", "l1", "m1", map[string]any{"timestamp": "1", "asset": map[string]any{"objectKey": "l1.png", "status": "pending"}})
	png := []byte("\x89PNG label bytes")
	requireAppliedOnce(t, concurrently(10, func() response {
		return a.upload(key, assetPath("r1", "traceability-labels", "l1", "l1.png"), "image/png", digestHeader(png), png)
	}))
	require.Len(t, a.walkAll(key, "r1", "traceability-labels", 10), 1)
	var n int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(), `SELECT count(*) FROM record_changes`).Scan(&n))
	require.Equal(t, 2, n, "the snapshot and one upload change")
	require.Len(t, a.storedObjects(), 1)
}

// Download URLs on both stores: the bytes with the recorded type as an
// attachment, Range and conditional requests, HEAD; any character changed
// is refused; after 15 minutes the URL no longer works.
func TestSignedURLs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testSignedURLs)
}

func testSignedURLs(t *testing.T, b backend) {
	var mu sync.Mutex
	// The object store checks expiry against its own clock, so the
	// service's clock starts at the real time there.
	now := time.UnixMilli(1_800_000_000_000)
	if b.s3 {
		now = time.Now().Truncate(time.Second)
	}
	setNow := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	a := b.newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	pdf := []byte("%PDF-1.7 " + strings.Repeat("haccp plan ", 100))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "plan.pdf", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "plan.pdf", "status": "pending"}})
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "plan.pdf"), "application/pdf", digestHeader(pdf), pdf).Status)
	urlAt := func(at time.Time) string {
		setNow(at)
		return a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL
	}
	u := urlAt(now)
	// problem checks a refusal: a problem document from our own route, the
	// store's own (XML) error otherwise.
	problem := func(r response, status int, suffix string) {
		t.Helper()
		if a.onS3() {
			require.Equal(t, status, r.Status, "body: %s", r.Body)
			return
		}
		requireProblem(t, r, status, suffix)
	}

	ok := a.download(u)
	require.Equal(t, http.StatusOK, ok.Status)
	require.Equal(t, pdf, ok.Body)
	require.Equal(t, "application/pdf", ok.Header.Get("Content-Type"))
	require.Equal(t, "attachment", ok.Header.Get("Content-Disposition"))
	if !a.onS3() {
		require.Equal(t, "nosniff", ok.Header.Get("X-Content-Type-Options"))
	}

	part := a.download(u, "Range", "bytes=0-7")
	require.Equal(t, http.StatusPartialContent, part.Status)
	require.Equal(t, "%PDF-1.7", string(part.Body))
	require.Equal(t, "bytes 0-7/"+strconv.Itoa(len(pdf)), part.Header.Get("Content-Range"))
	require.NotEmpty(t, ok.Header.Get("ETag"))
	require.Equal(t, http.StatusNotModified, a.download(u, "If-None-Match", ok.Header.Get("ETag")).Status)
	problem(a.download(u, "Range", "bytes=99999-"), http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable")
	problem(a.download(u, "If-Match", `"other"`), http.StatusPreconditionFailed, "precondition-failed")
	if a.onS3() {
		// A presigned URL signs its method: it reads, nothing else.
		require.Equal(t, http.StatusForbidden, fetchURL(t, http.MethodHead, u).Status)
		require.Equal(t, http.StatusForbidden, fetchURL(t, http.MethodDelete, u).Status)
	} else {
		head := a.do(req{Method: http.MethodHead, Path: mustRequestURI(t, u)})
		require.Equal(t, http.StatusOK, head.Status)
		require.Equal(t, strconv.Itoa(len(pdf)), head.Header.Get("Content-Length"))
	}

	// Any character changed: refused.
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	origin := parsed.Scheme + "://" + parsed.Host
	uri := parsed.RequestURI()
	for i := 0; i < len(uri); i++ {
		if uri[i] == '/' || uri[i] == '?' || uri[i] == '&' || uri[i] == '=' {
			continue
		}
		b := []byte(uri)
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		if a.onS3() {
			r := fetchURL(t, http.MethodGet, origin+string(b))
			require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound, http.StatusBadRequest}, r.Status, "changed at %d: %s", i, b)
			continue
		}
		r := a.get(string(b))
		require.NotEqual(t, http.StatusOK, r.Status, "changed at %d: %s", i, b)
		require.Contains(t, []int{http.StatusForbidden, http.StatusNotFound, http.StatusBadRequest}, r.Status, "changed at %d: %s", i, b)
		require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
		if r.Status == http.StatusForbidden {
			p := requireProblem(t, r, http.StatusForbidden, "download-url-expired")
			require.Contains(t, p.Detail, "was altered", "changed at %d: %s", i, b)
			require.Contains(t, p.Detail, "list the files again")
		}
	}
	if a.onS3() {
		require.Equal(t, http.StatusForbidden, fetchURL(t, http.MethodGet, origin+parsed.Path).Status, "no signature")
		// The store's clock decides: a URL signed 15 minutes and a second
		// ago is refused; one signed 14 minutes ago still works.
		problem(a.download(urlAt(time.Now().Add(-15*time.Minute-time.Second))), http.StatusForbidden, "")
		late := a.download(urlAt(time.Now().Add(-14 * time.Minute)))
		require.Equal(t, http.StatusOK, late.Status, "%s", late.Body)
		return
	}
	requireProblem(t, a.get(parsed.Path), http.StatusForbidden, "download-url-expired")

	// Expired after 15 minutes: a problem type of its own (spec 7's
	// forbidden is a missing scope, never retried), whose detail says to
	// list the files again for a fresh URL (spec 4.3).
	setNow(now.Add(15*time.Minute - time.Second))
	require.Equal(t, http.StatusOK, a.fetch(u).Status)
	setNow(now.Add(time.Second)) // 15 minutes after signing
	expired := requireProblem(t, a.fetch(u), http.StatusForbidden, "download-url-expired")
	require.Contains(t, expired.Detail, "has expired")
	require.Contains(t, expired.Detail, "list the files again")
	require.Equal(t, "Download URL expired or altered", expired.Title)
}

// Downloads are limited per client IP, not per key.
func TestSignedURLRateLimitedPerIP(t *testing.T) {
	t.Parallel()
	a := newApp(t, withRateLimit(3))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "n", "status": "pending"}})
	b := []byte("x")
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "n"), "text/plain", digestHeader(b), b).Status)
	u := a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL
	for i := 0; i < 3; i++ {
		r := a.fetch(u)
		require.Equal(t, http.StatusOK, r.Status)
		require.NotEmpty(t, r.Header.Get("X-RateLimit-Limit"))
	}
	require429(t, a.fetch(u))
}

func TestDeliveryImages(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testDeliveryImages)
}

func testDeliveryImages(t *testing.T, b backend) {
	a := b.newApp(t)
	a.addRestaurants("r1")
	provider := a.newKey(grant("r1", "deliveries:write", "delivery-images:write"))
	readOne := a.newKey(grant("r1", "deliveries:read"))
	readBoth := a.newKey(grant("r1", "deliveries:read", "delivery-images:read"))
	onlyImages := a.newKey(grant("r1", "delivery-images:read"))
	require.Equal(t, http.StatusOK, a.putJSON(provider, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
	imgPath := func(d, i string) string { return "/v1/ingest/restaurants/r1/deliveries/" + d + "/images/" + i }
	list := "/v1/restaurants/r1/deliveries/d1/images"

	require.Empty(t, a.fileList(readBoth, list))
	b1, b2 := photoBytes("image/png", 11), photoBytes("image/jpeg", 12)
	r := a.upload(provider, imgPath("d1", "img-2"), "image/jpeg", digestHeader(b2), b2)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, http.StatusOK, a.upload(provider, imgPath("d1", "img-1"), "image/png", digestHeader(b1), b1).Status)

	p := requireProblem(t, a.getAs(readOne, list), http.StatusForbidden, "forbidden")
	require.Contains(t, p.Detail, "delivery-images:read")
	requireProblem(t, a.getAs(onlyImages, list), http.StatusForbidden, "forbidden")
	items := a.fileList(readBoth, list)
	require.Len(t, items, 2)
	require.Equal(t, "img-1", items[0].ID, "ordered by id")
	require.Equal(t, "image/png", items[0].ContentType)
	require.Equal(t, int64(len(b1)), items[0].ByteLength)
	require.Equal(t, sha256Hex(b1), items[0].SHA256)
	require.Equal(t, b1, a.download(items[0].URL).Body)
	require.Equal(t, b2, a.download(items[1].URL).Body)
	var up struct{ Data fileItem }
	r.JSON(t, &up)
	require.Equal(t, b2, a.download(up.Data.URL).Body, "the upload's answer carries a working URL")

	again := a.upload(provider, imgPath("d1", "img-1"), "image/png", digestHeader(b1), b1)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	other := photoBytes("image/png", 13)
	requireProblem(t, a.upload(provider, imgPath("d1", "img-1"), "image/png", digestHeader(other), other), http.StatusConflict, "conflict")
	requireProblem(t, a.upload(provider, imgPath("nope", "img-1"), "image/png", digestHeader(b1), b1), http.StatusNotFound, "not-found")
	requireProblem(t, a.upload(provider, imgPath("d1", "img-3"), "image/png", digestHeader(b2), b1), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.upload(provider, imgPath("d1", "-bad"), "image/png", digestHeader(b1), b1), http.StatusBadRequest, "invalid-request")
	requireProblem(t, a.getAs(readBoth, "/v1/restaurants/r1/deliveries/nope/images"), http.StatusNotFound, "not-found")
	requireProblem(t, a.upload(readBoth, imgPath("d1", "img-9"), "image/png", digestHeader(b1), b1), http.StatusForbidden, "forbidden")
	require.Len(t, a.fileList(readBoth, list), 2)
}

// photoBytes returns bytes that begin as a photograph of the given media
// type does, followed by n bytes of filler: what the type check reads is
// the first bytes, and the rest must still arrive whole.
func photoBytes(mediaType string, n int) []byte {
	var head []byte
	switch mediaType {
	case "image/jpeg":
		head = []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}
	case "image/png":
		head = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	case "image/webp":
		head = []byte("RIFF\x00\x00\x00\x00WEBPVP8 ")
	case "image/heic":
		head = []byte("\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic")
	default:
		panic("no photograph of type " + mediaType)
	}
	return append(head, bytes.Repeat([]byte{0x5a}, n)...)
}

// Delivery images are photographs (spec 2.2: imageCount is the number of
// photographs): only photo media types are taken, and the bytes must be
// what the Content-Type says, on either store. imageCount stays the
// provider's own figure, whatever has been uploaded so far.
func TestDeliveryImagesArePhotographs(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testDeliveryImagesArePhotographs)
}

func testDeliveryImagesArePhotographs(t *testing.T, b backend) {
	a := b.newApp(t)
	a.addRestaurants("r1")
	provider := a.newKey(grant("r1", "deliveries:write", "delivery-images:write"))
	reader := a.newKey(grant("r1", "deliveries:read", "delivery-images:read"))
	require.Equal(t, http.StatusOK, a.putJSON(provider, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
	path := func(id string) string { return "/v1/ingest/restaurants/r1/deliveries/d1/images/" + id }

	html := []byte("<!DOCTYPE html><html><body>not a photo</body></html>")
	pdf := []byte("%PDF-1.7\n%not a photo")
	for name, c := range map[string]struct {
		contentType string
		body        []byte
		parameter   string
	}{
		"empty png":          {"image/png", nil, "body"},
		"pdf":                {"application/pdf", pdf, "Content-Type"},
		"html":               {"text/html", html, "Content-Type"},
		"gif declared":       {"image/gif", []byte("GIF89a\x01\x00\x01\x00"), "Content-Type"},
		"html declared png":  {"image/png", html, "body"},
		"pdf declared jpeg":  {"image/jpeg", pdf, "body"},
		"png declared jpeg":  {"image/jpeg", photoBytes("image/png", 64), "body"},
		"jpeg declared heic": {"image/heic", photoBytes("image/jpeg", 64), "body"},
	} {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, a.upload(provider, path("bad"), c.contentType, digestHeader(c.body), c.body),
				http.StatusBadRequest, "invalid-request")
			require.Len(t, p.Errors, 1)
			require.Equal(t, c.parameter, p.Errors[0].Parameter, "%s", p.Detail)
		})
	}
	require.Empty(t, a.fileList(reader, "/v1/restaurants/r1/deliveries/d1/images"), "nothing refused was recorded")

	// Each accepted type, larger than what the check reads, arrives whole;
	// a declared type with parameters or in other case is the same type.
	photos := map[string][]byte{}
	for i, ct := range []string{"image/jpeg", "image/png", "image/webp", "image/heic", "IMAGE/JPEG; q=1"} {
		mt, _, _ := strings.Cut(strings.ToLower(ct), ";")
		body := photoBytes(mt, 4096+i)
		id := fmt.Sprintf("img-%d", i)
		r := a.upload(provider, path(id), ct, digestHeader(body), body)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", ct, r.Body)
		photos[id] = body
	}
	heif := append([]byte("\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic"), make([]byte, 100)...)
	require.Equal(t, http.StatusOK, a.upload(provider, path("img-heif"), "image/heif", digestHeader(heif), heif).Status)
	photos["img-heif"] = heif
	chunked := photoBytes("image/png", 70_000)
	require.Equal(t, http.StatusOK, a.uploadChunked(provider, path("img-chunked"), "image/png", digestHeader(chunked), chunked).Status)
	photos["img-chunked"] = chunked

	items := a.fileList(reader, "/v1/restaurants/r1/deliveries/d1/images")
	require.Len(t, items, len(photos))
	for _, it := range items {
		require.Equal(t, photos[it.ID], a.download(it.URL).Body, it.ID)
	}
	var d map[string]any
	a.getAs(reader, "/v1/restaurants/r1/deliveries/d1").JSON(t, &d)
	require.Equal(t, float64(2), d["imageCount"], "imageCount is the provider's figure, not the list's length")
}

func mustRequestURI(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.RequestURI()
}

// An upload in flight is attached only to the file it was sent for: when
// the record's snapshot names another file by the time the upload commits,
// the bytes are refused and that other file can still be uploaded.
func TestAssetUploadForAFileTheRecordNoLongerNames(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	file := func(objectKey string) map[string]any {
		return map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1, "asset": map[string]any{"objectKey": objectKey, "status": "pending"}}
	}
	a.put(key, "r1", "drive-files", "f5", "m1", file("photo-A.jpg"))

	jpeg := bytes.Repeat([]byte{0xff, 0xd8, 0xff, 0xe0}, 25000)
	pr, pw := io.Pipe()
	rq, err := http.NewRequest(http.MethodPut, a.srv.URL+assetPath("r1", "drive-files", "f5", "photo-A.jpg"), pr)
	require.NoError(t, err)
	rq.ContentLength = int64(len(jpeg))
	rq.Header.Set("Authorization", "Bearer "+key)
	rq.Header.Set("Content-Type", "image/jpeg")
	rq.Header.Set("Repr-Digest", digestHeader(jpeg))
	// The client sends the body only once the server asks for it, which it
	// does after its checks: the first half below is written only then.
	rq.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}
	type result struct {
		status int
		body   []byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		res, err := client.Do(rq)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		done <- result{status: res.StatusCode, body: b, err: err}
	}()
	_, err = pw.Write(jpeg[:len(jpeg)/2])
	require.NoError(t, err)

	// Meanwhile the record is re-ingested naming another file.
	a.put(key, "r1", "drive-files", "f5", "m2", file("document-B.pdf"))
	_, err = pw.Write(jpeg[len(jpeg)/2:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	res := <-done
	require.NoError(t, res.err)
	require.Equal(t, http.StatusConflict, res.status, "%s", res.body)
	require.Contains(t, string(res.body), "now names another file")

	rec := a.getAs(key, recordsPath("r1", "drive-files")+"/f5")
	var e envelopeDoc
	rec.JSON(t, &e)
	require.Equal(t, map[string]any{"objectKey": "document-B.pdf", "status": "pending"}, assetOf(t, e), "the photo's bytes are not the PDF")
	require.Empty(t, a.fileList(key, assetsPath("r1", "drive-files", "f5")))

	pdf := []byte("%PDF-1.7 the real document")
	requireProblem(t, a.upload(key, assetPath("r1", "drive-files", "f5", "photo-A.jpg"), "image/jpeg", digestHeader(jpeg), jpeg),
		http.StatusConflict, "conflict")
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f5", "document-B.pdf"), "application/pdf", digestHeader(pdf), pdf).Status)
	items := a.fileList(key, assetsPath("r1", "drive-files", "f5"))
	require.Len(t, items, 1)
	require.Equal(t, "document-B.pdf", items[0].ID)
	require.Equal(t, "application/pdf", items[0].ContentType)
	require.Equal(t, sha256Hex(pdf), items[0].SHA256)
}

// The upload names its file; without the name the bytes could land under
// whatever the record names at commit time, so it is refused.
func TestAssetUploadRequiresObjectKey(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write"))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "a.pdf", "status": "pending"}})
	b := []byte("%PDF")
	base := strings.TrimSuffix(assetPath("r1", "drive-files", "f1", ""), "?objectKey=")
	for name, path := range map[string]string{
		"missing":       base,
		"empty":         base + "?objectKey=",
		"repeated":      base + "?objectKey=a.pdf&objectKey=a.pdf",
		"leading slash": base + "?objectKey=%2Fa.pdf",
		"scheme":        base + "?objectKey=https%3A%2F%2Fx%2Fa.pdf",
		"control char":  base + "?objectKey=a%0A.pdf",
		"over 1024":     base + "?objectKey=" + strings.Repeat("a", 1025),
	} {
		t.Run(name, func(t *testing.T) {
			p := requireProblem(t, a.upload(key, path, "application/pdf", digestHeader(b), b), http.StatusBadRequest, "invalid-request")
			require.Equal(t, "objectKey", p.Errors[0].Parameter)
		})
	}
	p := requireProblem(t, a.upload(key, assetPath("r1", "drive-files", "f1", "b.pdf"), "application/pdf", digestHeader(b), b),
		http.StatusConflict, "conflict")
	require.Contains(t, p.Detail, "now names another file")
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "a.pdf"), "application/pdf", digestHeader(b), b).Status)
}

// Server-made mutation ids live where client ids cannot: a client sending
// the id an upload would use gets a 400, and the upload still works.
func TestUploadMutationIDCannotBeTaken(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read", "areas:write"))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "a.pdf", "status": "pending"}})
	b := []byte("%PDF-1.7")
	r := a.upload(key, assetPath("r1", "drive-files", "f1", "a.pdf"), "application/pdf", digestHeader(b), b)
	require.Equal(t, http.StatusOK, r.Status)
	var up struct{ Data envelopeDoc }
	r.JSON(t, &up)
	require.Regexp(t, `^upload~[0-9a-f]{32}$`, up.Data.MutationID)
	taken := up.Data.MutationID
	requireProblem(t, a.ingest(key, "r1", "areas", "a1", taken, snapshot("r1", "a1", taken, 1, false, area("x"))),
		http.StatusBadRequest, "invalid-request")
	again := a.upload(key, assetPath("r1", "drive-files", "f1", "a.pdf"), "application/pdf", digestHeader(b), b)
	require.Equal(t, http.StatusOK, again.Status)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
}

// File storage that cannot be written is the operator's outage, not the
// client's fault: 503 with Retry-After, /health/ready says so, nothing is
// half-written, and the same upload succeeds once storage is back. (The
// staging directory is replaced by a file, since tests run as root, whom
// permission bits do not stop.)
func TestUnwritableFileStorageIs503(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "a.pdf", "status": "pending"}})
	staging := filepath.Join(a.cfg.BlobDir, "tmp")
	require.NoError(t, os.RemoveAll(staging))
	require.NoError(t, os.WriteFile(staging, nil, 0o600))

	b := []byte("%PDF-1.7 plan")
	r := a.upload(key, assetPath("r1", "drive-files", "f1", "a.pdf"), "application/pdf", digestHeader(b), b)
	requireProblem(t, r, http.StatusServiceUnavailable, "dependency-unavailable")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	requireProblem(t, a.get("/health/ready"), http.StatusServiceUnavailable, "dependency-unavailable")
	require.Empty(t, a.fileList(key, assetsPath("r1", "drive-files", "f1")))

	require.NoError(t, os.Remove(staging))
	require.NoError(t, os.Mkdir(staging, 0o750))
	require.Equal(t, http.StatusOK, a.get("/health/ready").Status)
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "a.pdf"), "application/pdf", digestHeader(b), b).Status)
	require.Len(t, a.fileList(key, assetsPath("r1", "drive-files", "f1")), 1)
}

// Range edge cases of RFC 9110: a suffix of zero bytes is unsatisfiable
// (416 with the size), an unknown range unit is ignored (the whole file).
func TestFileRangeEdges(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
	a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
		"asset": map[string]any{"objectKey": "n.txt", "status": "pending"}})
	b := []byte(strings.Repeat("0123456789", 4) + "abcdefghi") // 49 bytes
	require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "n.txt"), "text/plain", digestHeader(b), b).Status)
	u := a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL

	r := a.fetch(u, "Range", "bytes=-0")
	requireProblem(t, r, http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable")
	require.Equal(t, "bytes */49", r.Header.Get("Content-Range"))
	requireProblem(t, a.fetch(u, "Range", "bytes=-0, -00"), http.StatusRequestedRangeNotSatisfiable, "range-not-satisfiable")
	part := a.fetch(u, "Range", "bytes=-0,0-1")
	require.Equal(t, http.StatusPartialContent, part.Status)
	require.Equal(t, "01", string(part.Body))
	last := a.fetch(u, "Range", "bytes=-3")
	require.Equal(t, http.StatusPartialContent, last.Status)
	require.Equal(t, "ghi", string(last.Body))
	for _, unit := range []string{"foo=1-2", "items=0-1", "bytes"} {
		whole := a.fetch(u, "Range", unit)
		require.Equal(t, http.StatusOK, whole.Status, unit)
		require.Equal(t, b, whole.Body, unit)
	}
}

// A write grant is not a read grant (spec 2.5): a key holding only
// cleaning-task-pictures:write that uploads the file of a record another
// key wrote learns what became of its upload (the change's identity),
// never the record's data; a key that reads the collection gets the whole
// envelope. A snapshot replay of another key's mutation id answers only
// what the replaying request itself sent.
func TestWriteGrantDoesNotRead(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	owner := a.newKey(grant("r1", col+":write", col+":read"))
	writer := a.newKey(grant("r1", col+":write"))
	data := picture("photos/leak-1.jpg", nil)
	a.put(owner, "r1", col, "leak-1", "m-owner", data)

	jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte("photo"), 100)...)
	for _, attempt := range []string{"upload", "replay"} {
		r := a.upload(writer, assetPath("r1", col, "leak-1", "photos/leak-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", attempt, r.Body)
		var up struct{ Data map[string]any }
		r.JSON(t, &up)
		require.NotContains(t, up.Data, "data", "%s: %s", attempt, r.Body)
		require.Equal(t, "leak-1", up.Data["id"])
		require.Equal(t, "2", up.Data["sequence"])
	}
	r := a.upload(owner, assetPath("r1", col, "leak-1", "photos/leak-1.jpg"), "image/jpeg", digestHeader(jpeg), jpeg)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	var full struct{ Data envelopeDoc }
	r.JSON(t, &full)
	require.Equal(t, "uploaded", assetOf(t, full.Data)["status"], "a reader gets the whole envelope")

	// The writer replays the owner's mutation: only an identical request
	// replays, so it learns nothing it did not send.
	body := snapshot("r1", "leak-1", "m-owner", 1_700_000_000_000, false, data)
	replay := a.ingest(writer, "r1", col, "leak-1", "m-owner", body)
	require.Equal(t, http.StatusOK, replay.Status, "%s", replay.Body)
	other := snapshot("r1", "leak-1", "m-owner", 1_700_000_000_000, false, picture("photos/other.jpg", nil))
	p := requireProblem(t, a.ingest(writer, "r1", col, "leak-1", "m-owner", other), http.StatusConflict, "conflict")
	require.NotContains(t, p.Detail, "leak-1.jpg")
}

// No caller chooses the host of a signed URL: without FOODSAFE_BASE_URL,
// the asset list, the delivery images list, an image upload's answer and
// MCP's list_assets all hand out URLs on this server's own address, as the
// connection reached it, whatever Host the request names (a caller could
// otherwise send another client's download, signature included, to a host
// of its choosing); with FOODSAFE_BASE_URL, that address.
func TestSignedURLHostNeverFromRequest(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]string{"unset": "", "configured": "https://api.example.test"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, withConfig(func(c *config.Config) { c.BaseURL = base }))
			want := base
			if want == "" {
				want = a.srv.URL // http://127.0.0.1:port: the address the connection reached
			}
			a.addRestaurants("r1")
			key := a.newKey(grant("r1", "drive-files:write", "drive-files:read", "deliveries:write", "deliveries:read",
				"delivery-images:write", "delivery-images:read"))
			a.put(key, "r1", "drive-files", "f1", "m1", map[string]any{"s3Key": "k", "name": "n", "sizeBytes": 1,
				"asset": map[string]any{"objectKey": "n", "status": "pending"}})
			b := []byte("x")
			require.Equal(t, http.StatusOK, a.upload(key, assetPath("r1", "drive-files", "f1", "n"), "text/plain", digestHeader(b), b).Status)
			require.Equal(t, http.StatusOK, a.putJSON(key, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
			jpeg := append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte("j"), 100)...)

			for _, host := range []string{"evil.example", "evil.example:8443", "127.0.0.1:1"} {
				send := func(method, path string, body []byte, header ...string) []byte {
					t.Helper()
					hr, err := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
					require.NoError(t, err)
					hr.Host = host
					hr.Header.Set("Authorization", "Bearer "+key)
					for i := 0; i+1 < len(header); i += 2 {
						hr.Header.Set(header[i], header[i+1])
					}
					res, err := a.srv.Client().Do(hr)
					require.NoError(t, err)
					defer res.Body.Close()
					out, err := io.ReadAll(res.Body)
					require.NoError(t, err)
					require.Equal(t, http.StatusOK, res.StatusCode, "%s %s: %s", method, path, out)
					return out
				}
				for _, path := range []string{assetsPath("r1", "drive-files", "f1"), "/v1/restaurants/r1/deliveries/d1/images"} {
					var list struct{ Data []fileItem }
					require.NoError(t, json.Unmarshal(send(http.MethodGet, path, nil), &list))
					for _, it := range list.Data {
						require.True(t, strings.HasPrefix(it.URL, want+"/v1/files/"), "Host %s: %s", host, it.URL)
					}
				}
				var up struct{ Data fileItem }
				require.NoError(t, json.Unmarshal(send(http.MethodPut, "/v1/ingest/restaurants/r1/deliveries/d1/images/img-"+
					strings.NewReplacer(".", "-", ":", "-").Replace(host), jpeg, "Content-Type", "image/jpeg", "Repr-Digest", digestHeader(jpeg)), &up))
				require.True(t, strings.HasPrefix(up.Data.URL, want+"/v1/files/"), "Host %s: %s", host, up.Data.URL)

				mcp := send(http.MethodPost, "/mcp", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_assets",`+
					`"arguments":{"restaurantId":"r1","collection":"drive-files","recordId":"f1"}}}`),
					"Content-Type", "application/json", "Accept", "application/json, text/event-stream")
				require.Contains(t, string(mcp), `"url":"`+want+`/v1/files/`, "list_assets, Host %s", host)
				require.NotContains(t, string(mcp), "evil")
			}
			// And the URLs work: the one a spoofed Host got downloads the file.
			u := a.fileList(key, assetsPath("r1", "drive-files", "f1"))[0].URL
			if base == "" {
				require.Equal(t, http.StatusOK, a.fetch(u).Status)
			}
		})
	}
}
