package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/blob"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/metrics"
	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// Resumable uploads follow draft-ietf-httpbis-resumable-upload at interop
// version 6 (drafts -04 and -05, what URLSession speaks on iOS 18.1 and
// later). Both upload endpoints accept them: a PUT carrying
// Upload-Draft-Interop-Version: 6 and Upload-Complete creates an upload
// resource, announced by a 104 before the body is read; HEAD, PATCH and
// DELETE on it resume, inspect and cancel it. The upload completes as the
// single PUT does: the digest declared at creation verified over the
// whole file, then the same answer. A request without the draft's
// headers is the single PUT, unchanged.
const (
	HeaderUploadInterop  = "Upload-Draft-Interop-Version"
	HeaderUploadComplete = "Upload-Complete"
	HeaderUploadOffset   = "Upload-Offset"
	HeaderUploadLimit    = "Upload-Limit"
	HeaderUploadLength   = "Upload-Length"
	// resumeInterop is the one interop version served; a request naming
	// another is a plain upload (the draft: servers ignore versions they
	// do not know).
	resumeInterop = "6"
	// partialUpload is the media type of a PATCH's body.
	partialUpload = "application/partial-upload"
	// resumeStoreTimeout bounds committing and completing once the
	// client's bytes are read (the client may have gone: its bytes are
	// kept all the same).
	resumeStoreTimeout = 2 * time.Minute
)

// structuredBool reads a header holding a structured-field boolean (?1 or
// ?0, RFC 9651).
func structuredBool(c *gin.Context, name string) (v, present bool, err error) {
	vals := c.Request.Header.Values(name)
	if len(vals) == 0 {
		return false, false, nil
	}
	item, err := httpsfv.UnmarshalItem(vals)
	b, ok := item.Value.(bool)
	if err != nil || !ok {
		return false, true, apperr.Param(name, "must be a structured-field boolean: ?1 (this request ends the upload) or ?0 (more follows)")
	}
	return b, true, nil
}

// headerLength reads a non-negative integer header; -1 when absent.
func headerLength(c *gin.Context, name string) (int64, error) {
	v := c.GetHeader(name)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strings.TrimLeft(v, "0123456789") != "" {
		return -1, apperr.Param(name, "must be a non-negative integer (bytes)")
	}
	return n, nil
}

// resumableCreation says whether an upload request creates a resumable
// upload (the draft's interop version 6 and Upload-Complete), and whether
// its body is the whole file.
func resumableCreation(c *gin.Context) (on, complete bool, err error) {
	if c.GetHeader(HeaderUploadInterop) != resumeInterop {
		return false, false, nil
	}
	complete, present, err := structuredBool(c, HeaderUploadComplete)
	if err == nil && !present {
		err = apperr.Param(HeaderUploadComplete, "is required with Upload-Draft-Interop-Version: 6: ?1 when this request's body ends the file, ?0 when more follows in PATCH requests")
	}
	return err == nil, complete, err
}

// uploadStored says whether t's file is already stored with the bytes of
// a digest: a replay, which the upload quota lets through.
func (a *API) uploadStored(t store.Resumption) func(ctx context.Context, sha string) (bool, error) {
	return func(ctx context.Context, sha string) (bool, error) {
		if t.Kind == store.ResumeImage {
			return a.store.DeliveryImageStored(ctx, imageKey(t), sha)
		}
		return a.store.AssetStored(ctx, assetKey(t), t.ObjectKey, sha)
	}
}

func imageKey(t store.Resumption) store.ImageKey {
	return store.ImageKey{DeliveryKey: store.DeliveryKey{RestaurantID: t.RestaurantID, DeliveryID: t.DeliveryID}, ImageID: t.ImageID}
}

func assetKey(t store.Resumption) store.RecordKey {
	return store.RecordKey{RestaurantID: t.RestaurantID, Collection: t.Collection, RecordID: t.RecordID}
}

// applyUpload attaches stored, verified bytes to t's file and answers as
// its upload endpoint does.
func (a *API) applyUpload(c *gin.Context, t store.Resumption, obj blob.Object, ct string) error {
	if t.Kind == store.ResumeImage {
		return a.applyImage(c, imageKey(t), obj, ct)
	}
	return a.applyAsset(c, assetKey(t), t.ObjectKey, obj, ct)
}

// uploadWrite is the metrics label of t's uploads.
func uploadWrite(t store.Resumption) metrics.Write {
	if t.Kind == store.ResumeImage {
		return metrics.WriteDeliveryImage
	}
	return metrics.WriteAsset
}

// resumeScope is the scope a request on t needs: that of its endpoint.
func resumeScope(t store.Resumption) string {
	if t.Kind == store.ResumeImage {
		return catalog.DeliveryImagesWrite
	}
	return t.Collection + ":write"
}

// newUploadID names an upload resource: 128 random bits, so that names
// are never guessed or reused. It is not a credential: every request on
// the resource is authenticated as the key that created it.
func newUploadID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// uploadPath is the upload resource of t.
func uploadPath(t store.Resumption) string {
	return "/v1/ingest/restaurants/" + t.RestaurantID + "/uploads/" + t.ID
}

// limitHeaders are the headers every answer about t carries: its limits
// (the largest file, the seconds left of its lifetime) and the version.
func (a *API) limitHeaders(c *gin.Context, t store.Resumption) {
	left := max(0, (t.ExpiresAt-a.now().UnixMilli())/1000)
	c.Header(HeaderUploadLimit, "max-size="+strconv.FormatInt(a.cfg.MaxAssetBytes, 10)+", max-age="+strconv.FormatInt(left, 10))
	c.Header(HeaderUploadInterop, resumeInterop)
}

// informational writes a 1xx answer with the headers set so far, on the
// connection itself: gin (and the writers wrapped around it) hold the
// status until the body's first byte, and would take 104 for the final
// status.
func informational(w http.ResponseWriter, code int) {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	w.WriteHeader(code)
}

// resumeCreate serves an upload request carrying the draft's headers: the
// same checks as the single PUT before its body (headers, size, quota,
// slot), then the upload resource, announced by a 104 before a byte of
// the body is read; then the body is kept as it arrives, and the upload
// completes at once when the body ended the file (Upload-Complete: ?1).
func (a *API) resumeCreate(c *gin.Context, t store.Resumption, complete bool) error {
	ct, want, err := uploadHeaders(c, t.Kind == store.ResumeImage)
	if err != nil {
		return err
	}
	length, err := headerLength(c, HeaderUploadLength)
	if err != nil {
		return err
	}
	if n := c.Request.ContentLength; complete && n >= 0 {
		if length >= 0 && length != n {
			return apperr.Param(HeaderUploadLength, "is %d, but this request's body (Upload-Complete: ?1) is the whole file, of %d bytes", length, n)
		}
		length = n
	}
	if length > a.cfg.MaxAssetBytes || c.Request.ContentLength > a.cfg.MaxAssetBytes {
		return a.errTooLarge()
	}
	t.ContentType, t.SHA256, t.Length = ct, hex.EncodeToString(want[:]), length
	quotaLength := length
	if quotaLength < 0 {
		quotaLength = c.Request.ContentLength
	}
	parked, err := a.openUploads(c, t.RestaurantID)
	if err != nil {
		return err
	}
	if err := a.uploadQuota(c, t.RestaurantID, quotaLength, parked, func(ctx context.Context) (bool, error) {
		return a.uploadStored(t)(ctx, t.SHA256)
	}); err != nil {
		return err
	}
	release, err := a.uploadSlot(c)
	if err != nil {
		return err
	}
	now := a.now().UnixMilli()
	t.ID, t.KeyID, t.CreatedAt, t.ExpiresAt = newUploadID(), principal(c).KeyID, now, now+a.cfg.UploadResumeLifetime.Milliseconds()
	if err := a.store.ResumptionCreate(c.Request.Context(), t); err != nil {
		release()
		return err
	}
	body := a.newUploadBody(c)
	leave := a.resumes.enter(t.ID, body, release)
	defer leave()
	c.Header("Location", a.baseURL(c)+uploadPath(t))
	a.limitHeaders(c, t)
	informational(c.Writer, 104)
	return a.resumeAppend(c, t, body, complete, http.StatusCreated)
}

// openUploadsFactor × FOODSAFE_UPLOADS_PER_KEY is the most resumable
// uploads a key may have open on a restaurant: every upload in flight may
// be cut and wait for its device to resume it while the next ones start,
// a few times over, but uploads abandoned without a DELETE do not pile up
// bytes in the file store until they expire.
const openUploadsFactor = 4

// openUploads refuses a creation when the key already has the most
// resumable uploads open on the restaurant (429 upload-quota-exceeded,
// Retry-After until the first of them expires), and otherwise says the
// bytes they claim, which the daily quota counts as used: they are in
// the file store though no file is attached yet. Creations checked at
// once each pass on the count before any of them, so the key may go past
// the count by at most its upload slots.
func (a *API) openUploads(c *gin.Context, restaurant string) (int64, error) {
	now := a.now()
	o, err := a.store.ResumptionsOpen(c.Request.Context(), restaurant, principal(c).KeyID, now.UnixMilli())
	if err != nil {
		return 0, err
	}
	most := int64(openUploadsFactor * a.cfg.UploadsPerKey)
	if o.Count < most {
		return o.Bytes, nil
	}
	wait := time.UnixMilli(o.FirstExpiry).Sub(now)
	c.Header("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
	return 0, apperr.New(apperr.UploadQuotaExceeded, "This key has %d resumable uploads open on restaurant %s, the most it may "+
		"have (%d times FOODSAFE_UPLOADS_PER_KEY). Nothing was stored: complete or cancel (DELETE) one of them, or retry after "+
		"the seconds in Retry-After, when the first of them expires. Other keys are not affected.", o.Count, restaurant, openUploadsFactor)
}

// errUploadMoved: another request appended to the upload meanwhile (a
// stale request on another replica), so this one's bytes are not kept.
var errUploadMoved = apperr.New(apperr.Conflict, "Another request appended to this upload meanwhile; this request's bytes were not kept. HEAD the upload for its offset and resume from there.")

// resumeAppend keeps the request's body as the next bytes of t, as far
// as it arrives, then completes the upload when the client says the file
// ends here, or answers the bytes kept (status: 201 for a creation, 204
// for a PATCH).
func (a *API) resumeAppend(c *gin.Context, t store.Resumption, body *idleBody, complete bool, status int) error {
	limit := a.cfg.MaxAssetBytes - t.Kept
	if t.Length >= 0 {
		limit = t.Length - t.Kept
	}
	length := int64(-1)
	if complete && c.Request.ContentLength >= 0 {
		length = t.Kept + c.Request.ContentLength
	}
	// The client's bytes are kept whether or not it is still there to
	// hear it: a cut is what this is for.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), a.cfg.UploadTimeout+resumeStoreTimeout)
	defer cancel()
	_, err := a.blobs.PieceAppend(ctx, t.ID, body, limit, func(piece string, n int64) error {
		ok, err := a.store.ResumptionAdvance(ctx, t.RestaurantID, t.ID, t.Kept, t.Kept+n, piece, length, a.now().UnixMilli())
		if err == nil && !ok {
			err = fmt.Errorf("%w: %w", blob.ErrNotCommitted, errUploadMoved)
		}
		if err == nil {
			t.Kept += n
			t.Pieces = append(t.Pieces, piece)
		}
		return err
	})
	if errors.Is(err, errUploadMoved) {
		// The offset to answer is the one the other request left, or
		// none (404) when the upload expired meanwhile; read by the
		// row's names, as a creation has no upload id in its path.
		if t, err = a.store.ResumptionGet(c.Request.Context(), t.RestaurantID, t.ID, t.KeyID, a.now().UnixMilli()); err != nil {
			return err
		}
		c.Header(HeaderUploadOffset, strconv.FormatInt(t.Kept, 10))
		return errUploadMoved
	}
	c.Header(HeaderUploadOffset, strconv.FormatInt(t.Kept, 10))
	if err != nil {
		return a.appendFailed(c, t, body, err)
	}
	if !complete {
		c.Header(HeaderUploadComplete, "?0")
		a.limitHeaders(c, t)
		c.Status(status)
		return nil
	}
	if t.Length >= 0 && t.Kept != t.Length {
		return apperr.Param(HeaderUploadComplete, "is ?1, but the upload holds %d bytes of the %d declared", t.Kept, t.Length)
	}
	return a.resumeFinish(c, t)
}

// appendFailed answers an append that stopped early; the bytes before the
// failure are kept (Upload-Offset says how many).
func (a *API) appendFailed(c *gin.Context, t store.Resumption, body *idleBody, err error) error {
	kept := fmt.Sprintf("the first %d bytes of the upload are kept: HEAD it and PATCH from its Upload-Offset", t.Kept)
	switch {
	case body.idled:
		serverCutKey.set(c, true)
		return apperr.New(apperr.UploadTooSlow, "No bytes arrived for %s; %s.", a.cfg.UploadIdleTimeout, kept)
	case body.slow:
		serverCutKey.set(c, true)
		return apperr.New(apperr.UploadTooSlow, "The bytes arrived slower than %d bytes a second after the first %s; %s.",
			a.cfg.UploadMinRate, a.cfg.UploadRateGrace, kept)
	case errors.Is(err, blob.ErrTooLarge) && t.Length >= 0:
		return apperr.Param(HeaderUploadOffset, "the body goes past the upload's declared length of %d bytes; %s", t.Length, kept)
	case errors.Is(err, blob.ErrTooLarge):
		return a.errTooLarge()
	case errors.Is(err, blob.ErrUnavailable):
		return errStorageUnavailable.WithCause(err)
	case apperr.Is(err, apperr.Conflict):
		return err
	case c.Request.Context().Err() == nil:
		return apperr.New(apperr.Invalid, "The body could not be read completely; %s.", kept).WithCause(err)
	default:
		return err // the client has gone: answered as 499
	}
}

// resumeFinish completes t: its kept bytes are read back through the same
// verification as a single upload (the photograph's first bytes, the
// digest declared at creation, the size limit) into the content store,
// then attached to the file as the single PUT does, with its answer. An
// upload that can never complete (wrong digest, not a photograph, a file
// the record no longer names) is gone with its bytes; one that met an
// outage stays, for the client to complete again (PATCH of no bytes with
// Upload-Complete: ?1).
func (a *API) resumeFinish(c *gin.Context, t store.Resumption) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), resumeStoreTimeout)
	defer cancel()
	defer func() {
		if e, ok := apperr.As(err); ok && apperr.KindOf(e.Code).Status < 500 {
			a.resumeForget(ctx, t)
		}
	}()
	rc := a.blobs.PieceOpen(ctx, t.ID, t.Pieces)
	defer rc.Close()
	var src io.Reader = rc
	if t.Kind == store.ResumeImage {
		if src, err = peekPhoto(t.ContentType, rc); err != nil {
			if apperr.Is(err, apperr.Invalid) {
				return err
			}
			return errStorageUnavailable.WithCause(err)
		}
	}
	want, _ := hex.DecodeString(t.SHA256)
	if err := a.store.BlobClaim(ctx, t.SHA256, a.now().UnixMilli()); err != nil {
		return err
	}
	obj, err := a.blobs.Put(ctx, src, t.Kept, [32]byte(want), a.cfg.MaxAssetBytes)
	switch {
	case errors.Is(err, blob.ErrDigestMismatch):
		a.metrics.DigestMismatch(uploadWrite(t), t.Collection)
		return apperr.Param(HeaderReprDigest, "does not match the SHA-256 of the bytes received; nothing was stored")
	case errors.Is(err, blob.ErrTooLarge):
		return a.errTooLarge()
	case err != nil:
		return errStorageUnavailable.WithCause(err)
	}
	a.metrics.UploadVerified(uploadWrite(t), t.Collection, obj.Size)
	c.Header("Location", a.baseURL(c)+uploadPath(t))
	c.Header(HeaderUploadComplete, "?1")
	if err := a.applyUpload(c, t, obj, t.ContentType); err != nil {
		return err
	}
	a.resumeForget(ctx, t)
	return nil
}

// resumeForget deletes t's row, then its pieces. A failure is logged: the
// expiry job deletes what is left.
func (a *API) resumeForget(ctx context.Context, t store.Resumption) {
	_, err := a.store.ResumptionDelete(ctx, t.RestaurantID, t.ID)
	if err == nil {
		err = a.blobs.PieceDiscard(ctx, t.ID)
	}
	if err != nil {
		a.log.Warn("forgetting a resumable upload; the expiry job deletes what is left", "upload", t.ID, "err", err)
	}
}

// resumeLoad finds the request's upload resource: this key's, unexpired,
// else the one 404; the key must still hold the scope of the endpoint
// that created it.
func (a *API) resumeLoad(c *gin.Context) (store.Resumption, error) {
	id := c.Param("uploadId")
	if !blob.ValidUpload(id) {
		return store.Resumption{}, apperr.ErrNotFound
	}
	p := principal(c)
	t, err := a.store.ResumptionGet(c.Request.Context(), c.Param("restaurantId"), id, p.KeyID, a.now().UnixMilli())
	if err != nil {
		return t, err
	}
	if s := resumeScope(t); !p.Can(t.RestaurantID, s) {
		return t, apperr.New(apperr.Forbidden, "This key does not hold the scope %s for this restaurant.", s)
	}
	return t, nil
}

// uploadHead is HEAD on an upload resource: the bytes kept. A request of
// this key still sending to the upload is stopped first (its bytes so far
// kept, its upload slot freed): the client asking has given up on it.
func (a *API) uploadHead(c *gin.Context) error {
	t, err := a.resumeLoad(c)
	if err != nil {
		return err
	}
	if a.resumes.preempt(t.ID) {
		if t, err = a.resumeLoad(c); err != nil {
			return err
		}
	}
	c.Header("Cache-Control", "no-store")
	c.Header(HeaderUploadOffset, strconv.FormatInt(t.Kept, 10))
	c.Header(HeaderUploadComplete, "?0")
	if t.Length >= 0 {
		c.Header(HeaderUploadLength, strconv.FormatInt(t.Length, 10))
	}
	a.limitHeaders(c, t)
	c.Status(http.StatusNoContent)
	return nil
}

// uploadPatch is PATCH on an upload resource: the body is the bytes from
// Upload-Offset on, which must be the bytes kept (409 otherwise, with the
// right offset). Every rule of an upload holds for each PATCH: the
// upload quota for the whole file, a slot, the idle timeout and the
// minimum rate.
func (a *API) uploadPatch(c *gin.Context) (err error) {
	defer closeAfterRefusal(c, &err)
	t, err := a.resumeLoad(c)
	if err != nil {
		return err
	}
	offset, complete, err := patchHeaders(c)
	if err != nil {
		return err
	}
	// The stale request sending to this upload ends before the slot is
	// taken: it may hold the key's last slot, and this request is the
	// device resuming it.
	a.resumes.preempt(t.ID)
	release, err := a.uploadSlot(c)
	if err != nil {
		return err
	}
	body := a.newUploadBody(c)
	leave := a.resumes.enter(t.ID, body, release)
	defer leave()
	if t, err = a.resumeLoad(c); err != nil { // as the request it stopped left it
		return err
	}
	if offset != t.Kept {
		c.Header(HeaderUploadOffset, strconv.FormatInt(t.Kept, 10))
		return apperr.New(apperr.UploadOffsetMismatch, "Upload-Offset is %d, but the upload holds %d bytes: PATCH from %d.", offset, t.Kept, t.Kept)
	}
	if n := c.Request.ContentLength; n >= 0 && (t.Kept+n > a.cfg.MaxAssetBytes || (t.Length >= 0 && t.Kept+n > t.Length)) {
		if t.Length >= 0 && t.Length <= a.cfg.MaxAssetBytes {
			return apperr.Param(HeaderUploadOffset, "plus this body (%d bytes) goes past the upload's declared length of %d bytes", n, t.Length)
		}
		return a.errTooLarge()
	}
	whole := t.Length
	if whole < 0 && c.Request.ContentLength >= 0 {
		whole = t.Kept + c.Request.ContentLength
	}
	if err := a.uploadQuota(c, t.RestaurantID, whole, 0, func(ctx context.Context) (bool, error) {
		return a.uploadStored(t)(ctx, t.SHA256)
	}); err != nil {
		return err
	}
	return a.resumeAppend(c, t, body, complete, http.StatusNoContent)
}

// patchHeaders reads a PATCH's Content-Type, Upload-Offset and
// Upload-Complete.
func patchHeaders(c *gin.Context) (offset int64, complete bool, err error) {
	// Parameters (a charset some clients add) do not change the type.
	if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != partialUpload {
		return 0, false, apperr.Param("Content-Type", "must be %s: the body is the bytes of the file from Upload-Offset on", partialUpload)
	}
	offset, err = headerLength(c, HeaderUploadOffset)
	if err == nil && offset < 0 {
		err = apperr.Param(HeaderUploadOffset, "is required: the bytes of the file already sent (HEAD the upload for it)")
	}
	if err != nil {
		return 0, false, err
	}
	complete, present, err := structuredBool(c, HeaderUploadComplete)
	if err == nil && !present {
		err = apperr.Param(HeaderUploadComplete, "is required: ?1 when this request's body ends the file, ?0 when more follows")
	}
	return offset, complete, err
}

// uploadDelete is DELETE on an upload resource: the upload is cancelled,
// its bytes deleted, and the resource is gone (404 afterwards).
func (a *API) uploadDelete(c *gin.Context) error {
	t, err := a.resumeLoad(c)
	if err != nil {
		return err
	}
	a.resumes.preempt(t.ID)
	gone, err := a.store.ResumptionDelete(c.Request.Context(), t.RestaurantID, t.ID)
	if err != nil {
		return err
	}
	if !gone {
		return apperr.ErrNotFound
	}
	if err := a.blobs.PieceDiscard(c.Request.Context(), t.ID); err != nil {
		a.log.Warn("deleting a cancelled upload's bytes; the expiry job deletes them", "upload", t.ID, "err", err)
	}
	c.Status(http.StatusNoContent)
	return nil
}

// uploadResource is the route of an upload resource.
const uploadResource = "/v1/ingest/restaurants/:restaurantId/uploads/:uploadId"

// resumableDoc introduces the upload resource's operations.
const resumableDoc = "A resumable upload (draft-ietf-httpbis-resumable-upload, interop version 6): created by uploadRecordAsset " +
	"or putDeliveryImage sent with Upload-Draft-Interop-Version: 6 and Upload-Complete, which answer 104 Upload Resumption " +
	"Supported with this resource's Location before reading the body. Only the key that created it (or a session of that key) " +
	"reaches it, with the scope of the endpoint that created it; any other key gets 404. It lives FOODSAFE_UPLOAD_RESUME_LIFETIME " +
	"from creation (Upload-Limit's max-age says what is left), then answers 404 and its bytes are deleted."

// resumableCreated documents the answer of an upload endpoint that
// created a resumable upload whose file is not complete yet.
var resumableCreated = []openapi.Alt{{Status: http.StatusCreated, Description: "A resumable upload created with Upload-Complete: ?0: " +
	"the body is kept (Upload-Offset) and the file continues with PATCH at Location. A creation with ?1 is answered as the single " +
	"PUT once the body is complete; if it is cut, HEAD Location and PATCH the rest."}}

// applyAsset attaches stored bytes to the record's file and answers as
// the asset upload does.
func (a *API) applyAsset(c *gin.Context, k store.RecordKey, objectKey string, obj blob.Object, ct string) error {
	env, how, err := a.store.AssetUploadApply(c.Request.Context(), k,
		store.Upload{ObjectKey: objectKey, SHA256: obj.SHA256, ContentType: ct, ByteLength: obj.Size}, a.now().UnixMilli())
	if err != nil {
		return err
	}
	if how == store.Applied {
		a.countUpload(c, k.RestaurantID, obj.Size)
	}
	if col, _ := catalog.Lookup(k.Collection); !principal(c).Can(k.RestaurantID, col.ReadScope()) {
		// Each scope is a separate grant (spec 2.5): the record's data,
		// written by whoever wrote it, is for keys that read the
		// collection. A write grant learns what became of its upload (the
		// change's identity: id, sequence, mutationId, receivedAt); the
		// bytes' type, length and digest are its own.
		env.Data = nil
	}
	return respondIngested(c, env, how)
}

// applyImage attaches stored bytes to the delivery's image and answers
// as the image upload does.
func (a *API) applyImage(c *gin.Context, k store.ImageKey, obj blob.Object, ct string) error {
	item, replayed, err := a.store.DeliveryImagePut(c.Request.Context(), k,
		store.Upload{SHA256: obj.SHA256, ContentType: ct, ByteLength: obj.Size}, a.now().UnixMilli())
	if err != nil {
		return err
	}
	if !replayed {
		a.countUpload(c, k.RestaurantID, obj.Size)
	}
	items, err := a.withURL(c.Request.Context(), a.baseURL(c), k.RestaurantID, []wire.FileItem{item})
	if err != nil {
		return err
	}
	return respondWritten(c, items[0], replayed)
}
