package httpapi

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/ids"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// uploadContentType reads the Content-Type of an upload: a media type
// (type/subtype; mime.ParseMediaType alone takes a bare token) of 1 to 100
// characters (spec 2.6), stored as sent.
func uploadContentType(c *gin.Context) (string, error) {
	ct := c.GetHeader("Content-Type")
	if ct == "" {
		return "", apperr.Param("Content-Type", "header is required: the media type of the bytes")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if typ, sub, ok := strings.Cut(mt, "/"); err != nil || !ok || typ == "" || sub == "" || len(ct) > 100 || !printableASCII(ct) {
		return "", apperr.Param("Content-Type", "must be a media type (type/subtype, such as image/jpeg) of at most 100 printable ASCII characters")
	}
	return ct, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// reprDigest reads the announced SHA-256 from `Repr-Digest: sha-256=:<base64>:`.
func reprDigest(c *gin.Context) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	vals := c.Request.Header.Values(HeaderReprDigest)
	if len(vals) == 0 {
		return out, apperr.Param(HeaderReprDigest, "header is required: sha-256=:<base64 of the SHA-256 of the bytes>:")
	}
	dict, err := httpsfv.UnmarshalDictionary(vals)
	if err != nil {
		return out, apperr.Param(HeaderReprDigest, "is not a structured-field dictionary (RFC 9530): use sha-256=:<base64>:")
	}
	m, ok := dict.Get("sha-256")
	if !ok {
		return out, apperr.Param(HeaderReprDigest, "must carry a sha-256 digest: sha-256=:<base64>:")
	}
	item, ok := m.(httpsfv.Item)
	b, isBytes := item.Value.([]byte)
	if !ok || !isBytes || len(b) != sha256.Size {
		return out, apperr.Param(HeaderReprDigest, "sha-256 must be a byte sequence of 32 bytes: sha-256=:<base64>:")
	}
	copy(out[:], b)
	return out, nil
}

// photoTypes are the media types a delivery image may declare, each with
// the family its first bytes must show: delivery images are photographs
// (spec 2.2, imageCount "Number of photographs"), as cameras and phones
// write them. HEIC and HEIF are one container, told apart by brand only.
var photoTypes = map[string]string{
	"image/jpeg": "image/jpeg", "image/png": "image/png", "image/webp": "image/webp",
	"image/heic": "image/heif", "image/heif": "image/heif",
}

// photoMediaTypes are the keys of photoTypes, sorted: the media types the
// OpenAPI document lists for a delivery image's body.
func photoMediaTypes() []string {
	return slices.Sorted(maps.Keys(photoTypes))
}

// photoType reads a declared Content-Type as a photo family; ok is false
// for any type that is not a photograph's.
func photoType(ct string) (family string, ok bool) {
	mt, _, _ := mime.ParseMediaType(ct) // lower-cased; ct is already valid
	family, ok = photoTypes[mt]
	return family, ok
}

// heifBrands are the major brands of an ISO BMFF 'ftyp' box that mark a
// HEIF still image or sequence (ISO/IEC 23008-12), HEIC included.
var heifBrands = map[string]bool{"heic": true, "heix": true, "heim": true, "heis": true, "hevc": true,
	"hevx": true, "hevm": true, "hevs": true, "mif1": true, "mif2": true, "msf1": true}

// sniffPhoto names the photo family the first bytes of a file show, or ""
// when they are not one: http.DetectContentType knows JPEG, PNG and WebP by
// their signatures; HEIF starts with an 'ftyp' box naming its brand.
func sniffPhoto(head []byte) string {
	switch t := http.DetectContentType(head); t {
	case "image/jpeg", "image/png", "image/webp":
		return t
	}
	if len(head) >= 12 && string(head[4:8]) == "ftyp" && heifBrands[string(head[8:12])] {
		return "image/heif"
	}
	return ""
}

// checkPhoto refuses bytes that do not begin as the declared photo family
// does, before anything is stored; head is at most the first 512 bytes.
func checkPhoto(declared string, head []byte) error {
	want, _ := photoType(declared)
	switch got := sniffPhoto(head); {
	case len(head) == 0:
		return apperr.Param("body", "is empty: a delivery image is a photograph's bytes")
	case got == "":
		return apperr.Param("body", "is not a photograph: the bytes are not JPEG, PNG, WebP or HEIC/HEIF")
	case got != want:
		return apperr.Param("body", "is %s, not the declared %s: send the Content-Type of the bytes", got, declared)
	}
	return nil
}

// receiveFile streams the request body into blob storage, hashing it on
// the way; nothing is kept unless it matches Repr-Digest and the size limit.
// w and the collection (empty for delivery images) label the upload metrics.
// photo requires a photograph (delivery images): a photo media type, and
// first bytes that show it; only those bytes are read ahead, the rest
// streams as for any file. stored says whether the file is already stored
// with the announced digest: a replay, which the upload quota lets
// through since it stores nothing.
func (a *API) receiveFile(c *gin.Context, w metrics.Write, collection string, photo bool,
	stored func(ctx context.Context, sha string) (bool, error)) (blob.Object, string, error) {
	ct, want, err := uploadHeaders(c, photo)
	if err != nil {
		return blob.Object{}, "", err
	}
	if c.Request.ContentLength > a.cfg.MaxAssetBytes {
		return blob.Object{}, "", a.errTooLarge()
	}
	if err := a.uploadQuota(c, c.Param("restaurantId"), c.Request.ContentLength, 0, func(ctx context.Context) (bool, error) {
		return stored(ctx, hex.EncodeToString(want[:]))
	}); err != nil {
		return blob.Object{}, "", err
	}
	release, err := a.uploadSlot(c)
	if err != nil {
		return blob.Object{}, "", err
	}
	defer release()
	// Files may take longer to arrive than a JSON body, but not stall.
	body := a.newUploadBody(c)
	var src io.Reader = body
	if photo {
		if src, err = peekPhoto(ct, body); err != nil {
			if apperr.Is(err, apperr.Invalid) {
				return blob.Object{}, "", err
			}
			return blob.Object{}, "", a.uploadFailed(c, body, w, collection, err)
		}
	}
	// Claimed before a byte is written: the blob collector leaves claimed
	// bytes alone for FOODSAFE_BLOB_GRACE, however long the upload or the
	// commit of its reference takes.
	if err := a.store.BlobClaim(c.Request.Context(), hex.EncodeToString(want[:]), a.now().UnixMilli()); err != nil {
		return blob.Object{}, "", err
	}
	obj, err := a.blobs.Put(c.Request.Context(), src, c.Request.ContentLength, want, a.cfg.MaxAssetBytes)
	if err != nil {
		return blob.Object{}, "", a.uploadFailed(c, body, w, collection, err)
	}
	a.metrics.UploadVerified(w, collection, obj.Size)
	return obj, ct, nil
}

// uploadHeaders reads what every upload declares before its body: its
// Content-Type (a photograph's, when photo) and its Repr-Digest.
func uploadHeaders(c *gin.Context, photo bool) (string, [sha256.Size]byte, error) {
	ct, err := uploadContentType(c)
	if err != nil {
		return "", [sha256.Size]byte{}, err
	}
	if _, ok := photoType(ct); photo && !ok {
		return "", [sha256.Size]byte{}, apperr.Param("Content-Type", "must be a photograph's media type: image/jpeg, image/png, image/webp, image/heic or image/heif")
	}
	want, err := reprDigest(c)
	return ct, want, err
}

// peekPhoto checks that r begins as the declared photograph: it peeks at
// the first 512 bytes (all http.DetectContentType reads) and streams on
// from the same reader, so the body is never held whole. A refusal is an
// invalid-request; any other error is the reader's.
func peekPhoto(ct string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 512)
	head, err := br.Peek(512)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := checkPhoto(ct, head); err != nil {
		return nil, err
	}
	return br, nil
}

func (a *API) errTooLarge() error {
	return apperr.New(apperr.PayloadTooLarge, "The file exceeds the limit of %d bytes.", a.cfg.MaxAssetBytes)
}

// uploadFailed answers an upload whose bytes could not be read or stored;
// nothing was kept.
func (a *API) uploadFailed(c *gin.Context, body *idleBody, w metrics.Write, collection string, err error) error {
	if cut := body.cut(a.cfg); cut != nil {
		serverCutKey.set(c, true)
		return cut
	}
	switch {
	case errors.Is(err, blob.ErrTooLarge):
		return a.errTooLarge()
	case errors.Is(err, blob.ErrDigestMismatch):
		a.metrics.DigestMismatch(w, collection)
		return apperr.Param(HeaderReprDigest, "does not match the SHA-256 of the bytes received; nothing was stored")
	case errors.Is(err, blob.ErrUnavailable):
		return errStorageUnavailable.WithCause(err)
	case c.Request.Context().Err() == nil:
		return apperr.New(apperr.Invalid, "The body could not be read completely; nothing was stored.").WithCause(err)
	default:
		return err // the client has gone: answered as 499
	}
}

// withURL signs a download URL, valid urlLifetime, into each item;
// urlExpiresAt is the instant the store says the URL stops working.
func (a *API) withURL(ctx context.Context, baseURL, restaurant string, items []wire.FileItem) ([]wire.FileItem, error) {
	now := a.now()
	for i := range items {
		it := &items[i]
		u, exp, err := a.blobs.DownloadURL(ctx, blob.Download{BaseURL: baseURL, Scope: restaurant,
			Object: blob.Object{SHA256: it.SHA256, Size: it.ByteLength}, ContentType: it.ContentType, SignedAt: now, Lifetime: urlLifetime})
		if err != nil {
			return nil, apperr.New(apperr.DependencyUnavailable, "Download URLs cannot be signed right now; retry with backoff.").WithCause(err)
		}
		it.URL, it.URLExpiresAt = u, wire.Millis(exp.UnixMilli())
	}
	return items, nil
}

// fileList is a complete list of files with their download URLs.
func (a *API) fileList(ctx context.Context, baseURL, restaurant string, items []wire.FileItem) (List[wire.FileItem], error) {
	items, err := a.withURL(ctx, baseURL, restaurant, items)
	return List[wire.FileItem]{Data: items}, err
}

// fileCollection is the 400 for uploads into collections without files.
func fileCollection(name string) error {
	if col, _ := catalog.Lookup(name); !col.CarriesFiles {
		return apperr.Param("collection", "carries no files: only cleaning-task-pictures, traceability-labels and drive-files do")
	}
	return nil
}

// objectKeyParam reads the objectKey an asset upload is for. The bytes are
// attached to that file only: a record whose snapshot names another file by
// the time the upload commits refuses them (409), so an upload in flight
// can never land under the wrong name.
func (a *API) objectKeyParam(c *gin.Context) (string, error) {
	v, ok, err := queryOnce(c, "objectKey")
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", apperr.Param("objectKey", "is required: the data.asset.objectKey of the file these bytes are, URL-encoded")
	case !a.schemas.Valid("objectKey", v):
		return "", apperr.Param("objectKey", "must be 1 to 1024 characters with no scheme prefix, no leading slash and no control characters")
	}
	return v, nil
}

// closeAfterRefusal makes a failed upload's answer close the connection.
// Otherwise net/http reads what is left of an unread body (up to 256 KiB)
// before it writes the answer, so a client refused a slot, or refused for a
// bad header or a missing record, that trickles or stalls after a few bytes
// without Expect: 100-continue would get its 429 only when the read
// deadline ran out, holding its connection all that time.
func closeAfterRefusal(c *gin.Context, err *error) {
	if *err != nil {
		c.Header("Connection", "close")
	}
}

// assetsList is GET .../records/:recordId/assets (tool list_assets):
// verified uploads only.
func (a *API) assetsList(ctx context.Context, r request) (List[wire.FileItem], error) {
	k := recordKey(r.params)
	if !ids.Valid(k.RecordID) {
		return List[wire.FileItem]{}, apperr.ErrNotFound
	}
	items, err := a.store.AssetList(ctx, k)
	if err != nil {
		return List[wire.FileItem]{}, err
	}
	return a.fileList(ctx, r.baseURL, k.RestaurantID, items)
}

// deliveryImagesList is GET .../deliveries/:deliveryId/images (tool
// list_delivery_images).
func (a *API) deliveryImagesList(ctx context.Context, r request) (List[wire.FileItem], error) {
	restaurant, deliveryID := r.params.path("restaurantId"), r.params.path("deliveryId")
	if !ids.Valid(deliveryID) {
		return List[wire.FileItem]{}, apperr.ErrNotFound
	}
	items, err := a.store.DeliveryImageList(ctx, store.DeliveryKey{RestaurantID: restaurant, DeliveryID: deliveryID})
	if err != nil {
		return List[wire.FileItem]{}, err
	}
	return a.fileList(ctx, r.baseURL, restaurant, items)
}

// fileGet serves GET/HEAD /v1/files/:restaurantId/:sha256: the URL's own
// signature is its authorisation. Range and conditional requests are
// handled by http.ServeContent. With an object store, downloads go to the
// store's presigned URLs and this route has nothing to serve.
func (a *API) fileGet(c *gin.Context) error {
	if a.files == nil {
		return apperr.ErrNotFound
	}
	restaurant, sha := c.Param("restaurantId"), c.Param("sha256")
	var vals [3]string
	for i, name := range []string{"type", "expires", "signature"} {
		v, ok, err := queryOnce(c, name)
		if err != nil || !ok {
			return errAlteredURL
		}
		vals[i] = v
	}
	switch err := a.files.Signer.Verify(blob.FilesPath(restaurant, sha), vals[0], vals[1], vals[2], a.now()); {
	case errors.Is(err, blob.ErrURLExpired):
		return errExpiredURL
	case err != nil:
		return errAlteredURL
	}
	f, err := a.files.Open(sha)
	if errors.Is(err, os.ErrNotExist) {
		return apperr.ErrNotFound
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(a.cfg.UploadTimeout))
	exp, _ := strconv.ParseInt(vals[1], 10, 64)
	h := c.Writer.Header()
	h.Set("Content-Type", vals[0])
	h.Set("ETag", `"`+sha+`"`)
	h.Set("Cache-Control", "private, max-age="+strconv.FormatInt(max(0, (exp-a.now().UnixMilli())/1000), 10))
	// The bytes are the restaurant's, in a type its device declared: never
	// let a browser render them as part of this origin.
	h.Set("Content-Disposition", "attachment")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if !satisfiableRange(c.Request) {
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(st.Size(), 10))
		return errRangeNotSatisfiable
	}
	coalesceRanges(c.Request, st.Size(), vals[0])
	http.ServeContent(&problemWriter{ResponseWriter: c.Writer, a: a, c: c}, c.Request, "", st.ModTime(), f)
	return nil
}

// satisfiableRange corrects two answers of http.ServeContent before it
// runs (RFC 9110 14.1-14.2): a Range in a unit other than bytes is ignored
// (the whole file, 200), where ServeContent answers 416; and a suffix range
// of length 0 ("-0") is unsatisfiable, where ServeContent serves a 206 with
// an inverted Content-Range. It drops the header or its "-0" parts and
// reports false when nothing satisfiable is left.
func satisfiableRange(r *http.Request) bool {
	v := r.Header.Get("Range")
	if v == "" {
		return true
	}
	unit, set, ok := strings.Cut(v, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") {
		r.Header.Del("Range")
		return true
	}
	var keep []string
	for _, spec := range strings.Split(set, ",") {
		if spec = strings.TrimSpace(spec); strings.TrimLeft(strings.TrimPrefix(spec, "-"), "0") == "" && strings.HasPrefix(spec, "-") {
			continue // "-0", "-00": a suffix of no bytes
		}
		keep = append(keep, spec)
	}
	if len(keep) == 0 {
		return false
	}
	r.Header.Set("Range", "bytes="+strings.Join(keep, ","))
	return true
}

// problemWriter turns the plain-text errors of standard file servers
// (http.ServeContent's 416 for an unsatisfiable Range and 412 for a failed
// If-Match; 404s of the documentation assets) into problem documents.
type problemWriter struct {
	gin.ResponseWriter
	a      *API
	c      *gin.Context
	failed bool
}

func (w *problemWriter) WriteHeader(code int) {
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.failed = true
	var err error
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		err = errRangeNotSatisfiable
	case http.StatusPreconditionFailed:
		err = apperr.New(apperr.PreconditionFailed, "If-Match or If-Unmodified-Since does not match the file.")
	case http.StatusNotFound:
		err = apperr.ErrNotFound
	default:
		err = fmt.Errorf("serving file: status %d", code)
	}
	p := w.a.problemFor(w.c, err)
	body, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.ResponseWriter.WriteHeader(code)
	_, _ = w.ResponseWriter.Write(body)
}

func (w *problemWriter) Write(b []byte) (int, error) {
	if w.failed {
		return len(b), nil // ServeContent's plain-text body, replaced above
	}
	return w.ResponseWriter.Write(b)
}

var errRangeNotSatisfiable = apperr.New(apperr.RangeNotSatisfiable, "The requested Range cannot be satisfied; Content-Range gives the file's size.")

var errStorageUnavailable = apperr.New(apperr.DependencyUnavailable, "The file store is briefly unavailable; nothing was stored. Retry with backoff.")

// The two answers of a download URL that cannot be used (spec 4.3: call
// again for a fresh URL), each with what to do, under one problem type.
var (
	errExpiredURL = apperr.New(apperr.DownloadURLExpired, "The download URL has expired (a URL works %s from its listing). %s",
		urlLifetimeText, freshURL)
	errAlteredURL = apperr.New(apperr.DownloadURLExpired, "The download URL was altered: a character was changed or a part "+
		"is missing, so its signature does not match. Use it exactly as listed. %s", freshURL)
)

const freshURL = "For a fresh one, list the files again (GET .../records/{recordId}/assets or " +
	".../deliveries/{deliveryId}/images) and download with the new url before its urlExpiresAt."

// HeaderReprDigest carries the SHA-256 of an upload (RFC 9530).
const HeaderReprDigest = "Repr-Digest"
