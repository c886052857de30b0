package tests

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
	"github.com/foodsafe/foodsafe/internal/maintain"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// maxResent is the most bytes a cut upload may send twice: what the
// server had not durably kept when the connection was cut.
const maxResent = 512 << 10

// randomFile is n pseudo-random bytes starting with head.
func randomFile(seed uint64, head []byte, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	copy(b, head)
	return b
}

// resumableStart sends an upload that creates a resumable upload from a
// raw connection, as a device whose network drops mid-body: the headers
// (Content-Length of the whole file, Upload-Complete: ?1), then, once the
// 104 came, the first sent bytes of the body. It returns the upload
// resource's path and the connection, still open (the caller closes it:
// a cut), or nil and the final answer when none came.
func (a *app) resumableStart(key, path, contentType string, file []byte, sent int, complete string) (string, net.Conn) {
	a.t.Helper()
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	require.NoError(a.t, err)
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\n"+
		"Repr-Digest: %s\r\nContent-Length: %d\r\nUpload-Draft-Interop-Version: 6\r\nUpload-Complete: %s\r\n\r\n",
		path, a.srv.Listener.Addr(), key, contentType, digestHeader(file), len(file), complete)
	require.NoError(a.t, err)
	tp := textproto.NewReader(bufio.NewReader(conn))
	line, err := tp.ReadLine()
	require.NoError(a.t, err)
	require.True(a.t, strings.HasPrefix(line, "HTTP/1.1 104 "), "the informational answer comes before the body is sent: %q", line)
	h, err := tp.ReadMIMEHeader()
	require.NoError(a.t, err)
	require.Equal(a.t, "6", h.Get("Upload-Draft-Interop-Version"))
	require.Contains(a.t, h.Get("Upload-Limit"), "max-age=")
	loc, err := url.Parse(h.Get("Location"))
	require.NoError(a.t, err)
	require.NotContains(a.t, loc.String(), secretOf(key), "the upload's URL carries no secret")
	_, err = conn.Write(file[:sent])
	require.NoError(a.t, err)
	return loc.Path, conn
}

// resumableCut is resumableStart with the connection closed after sent
// bytes.
func (a *app) resumableCut(key, path, contentType string, file []byte, sent int) string {
	a.t.Helper()
	loc, conn := a.resumableStart(key, path, contentType, file, sent, "?1")
	require.NoError(a.t, conn.Close())
	return loc
}

func draftHeaders(key string, kv ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + key, "Upload-Draft-Interop-Version": "6"}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// uploadOffset is HEAD on an upload resource: its Upload-Offset.
func (a *app) uploadOffset(key, loc string) int {
	a.t.Helper()
	r := a.do(req{Method: http.MethodHead, Path: loc, Header: draftHeaders(key)})
	require.Equal(a.t, http.StatusNoContent, r.Status, "%s", r.Header)
	require.Equal(a.t, "no-store", r.Header.Get("Cache-Control"))
	require.Equal(a.t, "?0", r.Header.Get("Upload-Complete"))
	require.Contains(a.t, r.Header.Get("Upload-Limit"), "max-size=")
	n, err := strconv.Atoi(r.Header.Get("Upload-Offset"))
	require.NoError(a.t, err)
	return n
}

// requireNoUpload asserts that HEAD on an upload resource answers 404
// (a HEAD's problem has no body).
func (a *app) requireNoUpload(key, loc string) {
	a.t.Helper()
	r := a.do(req{Method: http.MethodHead, Path: loc, Header: draftHeaders(key)})
	require.Equal(a.t, http.StatusNotFound, r.Status)
	require.Equal(a.t, "application/problem+json", r.Header.Get("Content-Type"))
}

// patch sends the bytes of the file from offset on (complete: the rest).
func (a *app) patch(key, loc string, offset int, body []byte, complete bool) response {
	a.t.Helper()
	c := "?0"
	if complete {
		c = "?1"
	}
	return a.do(req{Method: http.MethodPatch, Path: loc, Body: bytes.NewReader(body), Header: draftHeaders(key,
		"Content-Type", "application/partial-upload", "Upload-Offset", strconv.Itoa(offset), "Upload-Complete", c)})
}

// resume completes a cut upload as a device does: HEAD, then one PATCH of
// the rest. It checks that at most maxResent bytes are sent twice.
func (a *app) resume(key, loc string, file []byte, sent int) response {
	a.t.Helper()
	off := a.uploadOffset(key, loc)
	require.LessOrEqual(a.t, off, sent, "never more kept than sent")
	require.LessOrEqual(a.t, sent-off, maxResent, "bytes sent twice")
	return a.patch(key, loc, off, file[off:], true)
}

// A 12 MiB asset cut mid-body and completed by HEAD and one PATCH: absent
// from the record's files until completed, then byte-exact, and the
// completing answer is the single PUT's; a plain PUT is unchanged.
func TestResumableAssetUpload(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t)
		a.addRestaurants("r1")
		const col = "cleaning-task-pictures"
		key := a.newKey(grant("r1", col+":write", col+":read"))
		a.put(key, "r1", col, "f1", "m1", picture("docs/f1.pdf", nil))
		a.put(key, "r1", col, "f2", "m2", picture("docs/f2.pdf", nil))
		file := randomFile(1, []byte("%PDF-1.7\n"), 12<<20)
		sent := 7<<20 + 12345

		loc := a.resumableCut(key, assetPath("r1", col, "f1", "docs/f1.pdf"), "application/pdf", file, sent)
		require.True(t, strings.HasPrefix(loc, "/v1/ingest/restaurants/r1/uploads/"), loc)
		require.Empty(t, a.fileList(key, assetsPath("r1", col, "f1")), "nothing visible before completion")
		require.Equal(t, "pending", assetOf(t, a.walkAll(key, "r1", col, 10)[0])["status"])

		r := a.resume(key, loc, file, sent)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		var up struct{ Data envelopeDoc }
		r.JSON(t, &up)
		require.Equal(t, map[string]any{"objectKey": "docs/f1.pdf", "status": "uploaded", "contentType": "application/pdf",
			"byteLength": float64(len(file)), "sha256": sha256Hex(file)}, assetOf(t, up.Data))
		items := a.fileList(key, assetsPath("r1", col, "f1"))
		require.Len(t, items, 1)
		require.True(t, bytes.Equal(file, a.download(items[0].URL).Body), "byte-exact")
		a.requireNoUpload(key, loc)

		// The same bytes sent again in one PUT: the replay the single
		// PUT answers, with the same envelope.
		again := a.upload(key, assetPath("r1", col, "f1", "docs/f1.pdf"), "application/pdf", digestHeader(file), file)
		require.Equal(t, http.StatusOK, again.Status, "%s", again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.JSONEq(t, string(r.Body), string(again.Body))

		// A plain upload, and one naming an interop version not served:
		// today's single PUT, no upload resource.
		small := []byte("%PDF-1.7\nsmall")
		for _, h := range []map[string]string{nil, {"Upload-Draft-Interop-Version": "5", "Upload-Complete": "?1"}} {
			rq := uploadReq(key, assetPath("r1", col, "f2", "docs/f2.pdf"), "application/pdf", digestHeader(small), small)
			for k, v := range h {
				rq.Header[k] = v
			}
			plain := a.do(rq)
			require.Equal(t, http.StatusOK, plain.Status, "%s", plain.Body)
			require.Empty(t, plain.Header.Get("Location"))
			require.Empty(t, plain.Header.Get("Upload-Offset"))
		}
		require.Empty(t, a.pieces(), "no partial bytes left behind")
	})
}

// A 3 MiB delivery photograph cut mid-body, completed by HEAD and PATCH.
func TestResumableDeliveryImage(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t)
		a.addRestaurants("r1")
		provider := a.newKey(grant("r1", "deliveries:write", "delivery-images:write", "deliveries:read", "delivery-images:read"))
		require.Equal(t, http.StatusOK, a.putJSON(provider, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
		list := "/v1/restaurants/r1/deliveries/d1/images"
		photo := randomFile(2, []byte{0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00}, 3<<20)
		sent := 1<<20 + 777

		loc := a.resumableCut(provider, "/v1/ingest/restaurants/r1/deliveries/d1/images/img-1", "image/jpeg", photo, sent)
		require.Empty(t, a.fileList(provider, list), "nothing visible before completion")
		r := a.resume(provider, loc, photo, sent)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		var up struct{ Data fileItem }
		r.JSON(t, &up)
		require.Equal(t, "img-1", up.Data.ID)
		require.Equal(t, sha256Hex(photo), up.Data.SHA256)
		items := a.fileList(provider, list)
		require.Len(t, items, 1)
		require.True(t, bytes.Equal(photo, a.download(items[0].URL).Body), "byte-exact")

		// Created with Upload-Complete: ?0: 201, the rest to follow.
		rq := uploadReq(provider, "/v1/ingest/restaurants/r1/deliveries/d1/images/img-3", "image/jpeg", digestHeader(photo), photo[:1000])
		rq.Header["Upload-Draft-Interop-Version"], rq.Header["Upload-Complete"] = "6", "?0"
		r = a.do(rq)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		require.Equal(t, "1000", r.Header.Get("Upload-Offset"))
		u, err := url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, a.do(req{Method: http.MethodDelete, Path: u.Path, Header: draftHeaders(provider)}).Status)

		// Not a photograph: refused at completion, as the single PUT
		// refuses it, and the upload is gone with its bytes.
		text := bytes.Repeat([]byte("not a photo "), 100_000)
		loc = a.resumableCut(provider, "/v1/ingest/restaurants/r1/deliveries/d1/images/img-2", "image/jpeg", text, 1000)
		requireProblem(t, a.resume(provider, loc, text, 1000), http.StatusBadRequest, "invalid-request")
		a.requireNoUpload(provider, loc)
		require.Len(t, a.fileList(provider, list), 1)
		require.Empty(t, a.pieces())
	})
}

// pieces lists the partial bytes of resumable uploads the store holds.
func (a *app) pieces() []string {
	a.t.Helper()
	var out []string
	for _, p := range a.storedObjects() {
		if strings.Contains(p, "partial/") {
			out = append(out, p)
		}
	}
	return out
}

// A wrong digest at completion is the single PUT's 400: nothing stored,
// the upload gone.
func TestResumableWrongDigest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t)
		a.addRestaurants("r1")
		const col = "cleaning-task-pictures"
		key := a.newKey(grant("r1", col+":write", col+":read"))
		a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
		file := randomFile(3, nil, 2<<20)
		loc := a.resumableCut(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 1<<20)
		off := a.uploadOffset(key, loc)
		wrong := append([]byte(nil), file[off:]...)
		wrong[len(wrong)-1] ^= 1
		p := requireProblem(t, a.patch(key, loc, off, wrong, true), http.StatusBadRequest, "invalid-request")
		require.Equal(t, "Repr-Digest", p.Errors[0].Parameter)
		require.Empty(t, a.fileList(key, assetsPath("r1", col, "f1")))
		require.False(t, a.hasBytes(sha256Hex(file)), "nothing stored")
		require.Empty(t, a.pieces())
		a.requireNoUpload(key, loc)
	})
}

// The upload resource: PATCHes smaller than S3's smallest multipart part,
// a mismatching offset (409 with the right one), another key (404, as
// for a missing upload), a key without the scope (403), DELETE.
func TestResumableUploadResource(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t, withConfig(func(c *config.Config) { c.MaxAssetBytes = 400_000 }))
		a.addRestaurants("r1")
		const col = "cleaning-task-pictures"
		key := a.newKey(grant("r1", col+":write", col+":read"))
		other := a.newKey(grant("r1", col+":write", col+":read"))
		a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
		a.put(key, "r1", col, "f2", "m2", picture("f2.bin", nil))
		file := randomFile(4, nil, 300_000)

		// Created with Upload-Complete: ?0: the whole body is kept, 201.
		rq := uploadReq(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", digestHeader(file), file[:100_000])
		rq.Header["Upload-Draft-Interop-Version"], rq.Header["Upload-Complete"] = "6", "?0"
		r := a.do(rq)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		require.Equal(t, "100000", r.Header.Get("Upload-Offset"))
		u, err := url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		loc := u.Path

		a.requireNoUpload(other, loc)
		requireProblem(t, a.patch(other, loc, 100_000, file[100_000:], true), http.StatusNotFound, "not-found")
		requireProblem(t, a.do(req{Method: http.MethodDelete, Path: loc, Header: draftHeaders(other)}), http.StatusNotFound, "not-found")

		mismatch := a.patch(key, loc, 90_000, file[90_000:200_000], false)
		requireProblem(t, mismatch, http.StatusConflict, "mismatching-upload-offset")
		require.Equal(t, "100000", mismatch.Header.Get("Upload-Offset"))
		require.Equal(t, 100_000, a.uploadOffset(key, loc), "nothing appended by a refused PATCH")

		requireProblem(t, a.do(req{Method: http.MethodPatch, Path: loc, Body: bytes.NewReader(file[100_000:]),
			Header: draftHeaders(key, "Content-Type", "application/octet-stream", "Upload-Offset", "100000", "Upload-Complete", "?1")}),
			http.StatusBadRequest, "invalid-request")
		for _, ct := range []string{"", "application/partial-upload; =x", "application/partial-upload-x"} {
			requireProblem(t, a.do(req{Method: http.MethodPatch, Path: loc, Body: bytes.NewReader(file[100_000:]),
				Header: draftHeaders(key, "Content-Type", ct, "Upload-Offset", "100000", "Upload-Complete", "?1")}),
				http.StatusBadRequest, "invalid-request")
		}

		// A media type is compared without its parameters or case.
		r = a.do(req{Method: http.MethodPatch, Path: loc, Body: bytes.NewReader(file[100_000:200_000]), Header: draftHeaders(key,
			"Content-Type", "Application/Partial-Upload; charset=binary", "Upload-Offset", "100000", "Upload-Complete", "?0")})
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)
		require.Equal(t, "200000", r.Header.Get("Upload-Offset"))
		require.Empty(t, a.fileList(key, assetsPath("r1", col, "f1")))
		r = a.patch(key, loc, 200_000, file[200_000:], true)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		items := a.fileList(key, assetsPath("r1", col, "f1"))
		require.Len(t, items, 1)
		require.Equal(t, file, a.download(items[0].URL).Body)

		// Created without the file's length, then a PATCH past the
		// largest file: 413, nothing appended.
		rq = uploadReq(key, assetPath("r1", col, "f2", "f2.bin"), "application/octet-stream", digestHeader(file), file[:100_000])
		rq.Header["Upload-Draft-Interop-Version"], rq.Header["Upload-Complete"] = "6", "?0"
		r = a.do(rq)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		u, err = url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		requireProblem(t, a.patch(key, u.Path, 100_000, make([]byte, 300_001), false), http.StatusRequestEntityTooLarge, "payload-too-large")
		require.Equal(t, 100_000, a.uploadOffset(key, u.Path))
		require.Equal(t, http.StatusNoContent, a.do(req{Method: http.MethodDelete, Path: u.Path, Header: draftHeaders(key)}).Status)

		// DELETE: 204, then gone, bytes and all.
		loc = a.resumableCut(key, assetPath("r1", col, "f2", "f2.bin"), "application/octet-stream", file, 50_000)
		require.Equal(t, 50_000, a.uploadOffset(key, loc))
		require.NotEmpty(t, a.pieces())
		require.Equal(t, http.StatusNoContent, a.do(req{Method: http.MethodDelete, Path: loc, Header: draftHeaders(key)}).Status)
		a.requireNoUpload(key, loc)
		requireProblem(t, a.patch(key, loc, 50_000, file[50_000:], true), http.StatusNotFound, "not-found")
		require.Empty(t, a.pieces())
		require.Empty(t, a.fileList(key, assetsPath("r1", col, "f2")))
	})
}

// A new request for an upload stops the stale one at once, so its slot is
// free: with one upload slot per key, a device whose connection died
// without a FIN resumes at once instead of waiting out the idle timeout.
func TestResumableFreesStaleSlot(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey = 1; c.UploadIdleTimeout = time.Hour; c.UploadMinRate = 0 }))
		a.addRestaurants("r1")
		const col = "cleaning-task-pictures"
		key := a.newKey(grant("r1", col+":write", col+":read"))
		a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
		file := randomFile(6, nil, 1<<20)
		loc, conn := a.resumableStart(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 300_000, "?1")
		defer conn.Close() // silent: the server never hears of the drop

		// The HEAD preempts the stale request, whose read then fails
		// (not at the end of its body): every byte it received is kept,
		// on S3 too, where they were still in the part buffer.
		require.Equal(t, 300_000, a.uploadOffset(key, loc))
		r := a.resume(key, loc, file, 300_000)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		items := a.fileList(key, assetsPath("r1", col, "f1"))
		require.Len(t, items, 1)
		require.Equal(t, file, a.download(items[0].URL).Body)
	})
}

// A device that PATCHes without a HEAD while its stale request still
// holds the key's only upload slot is not refused: the stale request is
// stopped before the PATCH takes a slot.
func TestResumableDirectPatchAtSlotLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey = 1; c.UploadIdleTimeout = time.Hour; c.UploadMinRate = 0 }))
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	file := randomFile(6, nil, 1<<20)
	loc, conn := a.resumableStart(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 0, "?1")
	defer conn.Close() // silent, holding the slot

	r := a.patch(key, loc, 0, file, true)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	items := a.fileList(key, assetsPath("r1", col, "f1"))
	require.Len(t, items, 1)
	require.Equal(t, file, a.download(items[0].URL).Body)
}

// A request whose upload expired while it was sending commits nothing
// (the expiry job may already have deleted the upload's pieces) and
// leaves no piece behind, on either store; whether the job ran first or
// not.
func TestResumableExpiredMidRequestKeepsNoPiece(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, jobFirst := range []bool{false, true} {
			var shift atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
			a := b.newApp(t, withClock(clock), withConfig(func(c *config.Config) {
				c.UploadResumeLifetime = time.Minute
				c.UploadIdleTimeout = time.Hour
				c.UploadMinRate = 0
			}))
			a.addRestaurants("r1")
			const col = "cleaning-task-pictures"
			key := a.newKey(grant("r1", col+":write"))
			a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
			file := randomFile(8, nil, 1<<20)
			loc, conn := a.resumableStart(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 300_000, "?1")

			shift.Store(int64(2 * time.Minute))
			if jobFirst {
				require.NoError(t, a.maintenance(clock, maintain.Settings{}).RunOnce(context.Background()))
			}
			// The body ends early: the request commits what it read,
			// answers, and the server closes the connection.
			require.NoError(t, conn.(*net.TCPConn).CloseWrite())
			_, err := io.ReadAll(conn)
			require.NoError(t, err)
			require.NoError(t, conn.Close())

			require.Empty(t, a.pieces(), "job first: %v", jobFirst)
			a.requireNoUpload(key, loc)
		}
	})
}

// A request that lost the race for its offset to a request on another
// replica answers 409 with the offset the database holds (the
// other request's), not its own.
func TestResumableMovedAnswersStoredOffset(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	slow := withConfig(func(c *config.Config) { c.UploadIdleTimeout = time.Hour; c.UploadMinRate = 0 })
	a := newApp(t, withDatabaseURL(dbURL), slow)
	other := newApp(t, withDatabaseURL(dbURL), slow)
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	file := randomFile(9, nil, 1<<20)
	loc, conn := a.resumableStart(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 300_000, "?1")
	defer conn.Close()

	// The other replica does not know of the stale request: it takes
	// offset 0 first.
	r := other.patch(key, loc, 0, file[:100_000], false)
	require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Body)

	// The first request's body ends after all (no preemption on its
	// replica cancels it), and its commit at offset 0 finds the upload
	// moved on.
	_, err := conn.Write(file[300_000:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "100000", resp.Header.Get("Upload-Offset"))
	require.Equal(t, 100_000, a.uploadOffset(key, loc))
}

// createOpen starts a resumable upload of the first n bytes of file with
// Upload-Complete: ?0.
func (a *app) createOpen(key, path string, file []byte, n int) response {
	a.t.Helper()
	rq := uploadReq(key, path, "application/octet-stream", digestHeader(file), file[:n])
	rq.Header["Upload-Draft-Interop-Version"], rq.Header["Upload-Complete"] = "6", "?0"
	return a.do(rq)
}

// The bytes parked in open resumable uploads count against the daily
// upload quota: a key cannot hold more in uploads it never completes than
// it may attach. Cancelling one frees its bytes.
func TestResumableOpenUploadsCountAgainstQuota(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.MaxAssetBytes = 400_000; c.UploadQuotaBytes = 250_000 }))
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	file := randomFile(4, nil, 300_000)
	path := assetPath("r1", col, "f1", "f1.bin")

	r := a.createOpen(key, path, file, 200_000)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	first, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		p := requireProblem(t, a.createOpen(key, path, file, 200_000), http.StatusTooManyRequests, "upload-quota-exceeded")
		require.Contains(t, p.Detail, "200000 bytes in resumable uploads")
	}
	require.Len(t, a.pieces(), 1, "nothing kept of the refused creations")

	require.Equal(t, http.StatusNoContent, a.do(req{Method: http.MethodDelete, Path: first.Path, Header: draftHeaders(key)}).Status)
	r = a.createOpen(key, path, file, 200_000)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
}

// A key may have at most 4 × FOODSAFE_UPLOADS_PER_KEY resumable uploads
// open on a restaurant; beyond, 429 with Retry-After until the first
// expires. Another restaurant and another key are not affected, and
// cancelling one makes room.
func TestResumableOpenUploadsBounded(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.UploadsPerKey = 1; c.UploadQuotaBytes = 0 }))
	a.addRestaurants("r1", "r2")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write"), grant("r2", col+":write"))
	other := a.newKey(grant("r1", col+":write"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	a.put(key, "r2", col, "f1", "m1", picture("f1.bin", nil))
	file := randomFile(5, nil, 20_000)
	path := assetPath("r1", col, "f1", "f1.bin")

	var locs []string
	for i := 0; i < 4; i++ {
		r := a.createOpen(key, path, file, 10_000)
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
		u, err := url.Parse(r.Header.Get("Location"))
		require.NoError(t, err)
		locs = append(locs, u.Path)
	}
	r := a.createOpen(key, path, file, 10_000)
	requireProblem(t, r, http.StatusTooManyRequests, "upload-quota-exceeded")
	wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, wait)
	require.LessOrEqual(t, wait, int(a.cfg.UploadResumeLifetime/time.Second))

	require.Equal(t, http.StatusCreated, a.createOpen(key, assetPath("r2", col, "f1", "f1.bin"), file, 10_000).Status)
	require.Equal(t, http.StatusCreated, a.createOpen(other, path, file, 10_000).Status)

	require.Equal(t, http.StatusNoContent, a.do(req{Method: http.MethodDelete, Path: locs[0], Header: draftHeaders(key)}).Status)
	require.Equal(t, http.StatusCreated, a.createOpen(key, path, file, 10_000).Status)
}

// An abandoned upload's bytes are deleted by the maintenance job once its
// lifetime (FOODSAFE_UPLOAD_RESUME_LIFETIME) has passed, not before.
func TestResumableExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		a := b.newApp(t, withConfig(func(c *config.Config) { c.UploadResumeLifetime = time.Minute }))
		a.addRestaurants("r1")
		const col = "cleaning-task-pictures"
		key := a.newKey(grant("r1", col+":write"))
		a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
		file := randomFile(7, nil, 200_000)
		loc := a.resumableCut(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", file, 100_000)
		require.Equal(t, 100_000, a.uploadOffset(key, loc))
		require.NotEmpty(t, a.pieces())

		ctx := context.Background()
		require.NoError(t, a.maintenance(func() time.Time { return time.Now().Add(50 * time.Second) }, maintain.Settings{}).RunOnce(ctx))
		require.Equal(t, 100_000, a.uploadOffset(key, loc), "within its lifetime: kept")
		require.NotEmpty(t, a.pieces())

		require.NoError(t, a.maintenance(func() time.Time { return time.Now().Add(61 * time.Second) }, maintain.Settings{}).RunOnce(ctx))
		require.Empty(t, a.pieces(), "its bytes are gone")
		a.requireNoUpload(key, loc)
	})
}

// The upload quota holds for each PATCH, against the whole file: a
// creation of the first bytes passes, the PATCH that would take the key
// past its bytes of the day is 429 with nothing appended.
func TestResumableQuotaPerPatch(t *testing.T) {
	t.Parallel()
	a := newApp(t, withConfig(func(c *config.Config) { c.UploadQuotaBytes = 250_000 }))
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	file := randomFile(8, nil, 300_000)
	rq := uploadReq(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", digestHeader(file), file[:100_000])
	rq.Header["Upload-Draft-Interop-Version"], rq.Header["Upload-Complete"] = "6", "?0"
	r := a.do(rq)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
	u, err := url.Parse(r.Header.Get("Location"))
	require.NoError(t, err)
	over := a.patch(key, u.Path, 100_000, file[100_000:], true)
	requireProblem(t, over, http.StatusTooManyRequests, "upload-quota-exceeded")
	require.NotEmpty(t, over.Header.Get("Retry-After"))
	require.Equal(t, 100_000, a.uploadOffset(key, u.Path), "nothing appended")
}

// What a cut costs on the wire, in body bytes: a 12 MiB file cut after
// 7 MiB, resent whole (the single PUT) or resumed (HEAD and PATCH). Run
// with -v for the figures of docs/performance.md.
func TestResumableWireBytes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	const col = "cleaning-task-pictures"
	key := a.newKey(grant("r1", col+":write", col+":read"))
	a.put(key, "r1", col, "f1", "m1", picture("f1.bin", nil))
	a.put(key, "r1", col, "f2", "m2", picture("f2.bin", nil))
	file := randomFile(9, nil, 12<<20)
	sent := 7 << 20

	// Before: the single PUT, cut, nothing kept; the device sends it all again.
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\n"+
		"Repr-Digest: %s\r\nContent-Length: %d\r\n\r\n", assetPath("r1", col, "f1", "f1.bin"), key, digestHeader(file), len(file))
	require.NoError(t, err)
	_, err = conn.Write(file[:sent])
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	r := a.upload(key, assetPath("r1", col, "f1", "f1.bin"), "application/octet-stream", digestHeader(file), file)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	before := sent + len(file)

	// After: resumable, cut at the same byte, then HEAD and the rest.
	loc := a.resumableCut(key, assetPath("r1", col, "f2", "f2.bin"), "application/octet-stream", file, sent)
	off := a.uploadOffset(key, loc)
	r = a.patch(key, loc, off, file[off:], true)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	after := sent + len(file) - off
	t.Logf("a %d-byte file cut after %d bytes: %d body bytes on the wire resent whole, %d resumed (%.2f of the file, %.2f before)",
		len(file), sent, before, after, float64(after)/float64(len(file)), float64(before)/float64(len(file)))
	require.Less(t, after, before)
	require.LessOrEqual(t, after-len(file), maxResent, "at most maxResent bytes sent twice")
}
