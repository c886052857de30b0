package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/config"
)

// uploadSlots caps the uploads in progress, per key and per process, so
// that slow or stalled clients cannot hold every connection, buffer and
// object-store stream of a replica. Beyond a key's share the answer is a
// 429, beyond the process's a 503, both with Retry-After.
//
// The last reserved slots go only to keys with no upload in progress: a
// few keys, each sending several uploads, cannot fill the process, and a
// device starting its first upload finds a slot unless reserved other
// keys are each holding one too. A fixed per-key share would bound them
// as well, but would hold back a device sending a backlog while the
// server is idle; with the reserve it may take up to perKey slots while
// more than the reserve is free.
type uploadSlots struct {
	perKey, total, reserved int
	mu                      sync.Mutex
	running                 int
	byKey                   map[int64]int
}

// newUploadSlots keeps reservedPercent of total (rounded down) for keys
// with no upload in progress.
func newUploadSlots(perKey, total, reservedPercent int) *uploadSlots {
	return &uploadSlots{perKey: perKey, total: total, reserved: total * reservedPercent / 100, byKey: map[int64]int{}}
}

// uploadRetryAfter is the Retry-After, in seconds, of a refused upload:
// uploads end within seconds when their clients are sending.
const uploadRetryAfter = "5"

// acquire takes a slot for key or says why not; release gives it back.
func (s *uploadSlots) acquire(key int64) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, free := s.byKey[key], s.total-s.running
	switch {
	case held >= s.perKey:
		return nil, apperr.New(apperr.RateLimited,
			"This key already has %d uploads in progress, the most it may have at once; retry after the seconds in Retry-After.", s.perKey)
	case free <= 0:
		return nil, apperr.New(apperr.DependencyUnavailable,
			"The server is receiving the most uploads it takes at once (%d); retry after the seconds in Retry-After.", s.total)
	case held > 0 && free <= s.reserved:
		return nil, apperr.New(apperr.RateLimited,
			"This key has %d uploads in progress, and the server keeps its last %d upload slots for keys with none; "+
				"retry after the seconds in Retry-After, or once an upload of this key has ended.", held, s.reserved)
	}
	s.running++
	s.byKey[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.running--
			if s.byKey[key]--; s.byKey[key] <= 0 {
				delete(s.byKey, key)
			}
		})
	}, nil
}

// newUploadBody wraps the request's body in the deadlines of an upload
// (idleBody), starting now.
func (a *API) newUploadBody(c *gin.Context) *idleBody {
	start := time.Now()
	return &idleBody{r: c.Request.Body, rc: http.NewResponseController(c.Writer), idle: a.cfg.UploadIdleTimeout,
		start: start, end: start.Add(a.cfg.UploadTimeout), minRate: a.cfg.UploadMinRate, grace: a.cfg.UploadRateGrace}
}

// uploadSlot takes a slot for the request's key; a refusal carries its
// Retry-After header.
func (a *API) uploadSlot(c *gin.Context) (func(), error) {
	release, err := a.uploads.acquire(principal(c).KeyID)
	if err != nil {
		c.Header("Retry-After", uploadRetryAfter)
	}
	return release, err
}

// idleBody reads an upload's body with three deadlines on the
// connection: the whole upload must end by end (FOODSAFE_UPLOAD_TIMEOUT);
// no read may wait longer than idle (FOODSAFE_UPLOAD_IDLE_TIMEOUT) for its
// next bytes, so a stalled client gives its slot back within seconds; and,
// when minRate is set, the bytes so far must keep up with minRate a second
// past grace (FOODSAFE_UPLOAD_MIN_RATE, FOODSAFE_UPLOAD_RATE_GRACE, as
// Apache's mod_reqtimeout MinRate), so a client sending a byte now and
// then, which the idle timer alone never cuts, gives its slot back too.
type idleBody struct {
	r       io.Reader
	rc      *http.ResponseController
	idle    time.Duration
	start   time.Time
	end     time.Time
	minRate int64
	grace   time.Duration
	got     int64
	// idled and slow say which deadline cut the upload.
	idled, slow bool
	// draining is set when a newer request for the same resumable
	// upload stops this one (stop): it reads on only while bytes are
	// already there, each read waiting at most drainWait.
	draining atomic.Bool
}

// drainWait is how long a stopped upload's read waits for bytes: enough
// for those already in the connection's buffer, not for a client that
// has moved on to a newer request.
const drainWait = 250 * time.Millisecond

// stop makes the reader drain: from now on each read waits at most
// drainWait, including one already waiting. Safe from any goroutine.
func (b *idleBody) stop() {
	b.draining.Store(true)
	_ = b.rc.SetReadDeadline(time.Now().Add(drainWait))
}

// next is the deadline of the next read, and which one it is.
func (b *idleBody) next(now time.Time) (deadline time.Time, idle, slow bool) {
	deadline, idle = now.Add(b.idle), true
	if b.minRate > 0 {
		// One second more for every minRate bytes received.
		earned := time.Duration(float64(b.got) / float64(b.minRate) * float64(time.Second))
		if r := b.start.Add(b.grace + earned); r.Before(deadline) {
			deadline, idle, slow = r, false, true
		}
	}
	if !deadline.Before(b.end) {
		return b.end, false, false
	}
	return deadline, idle, slow
}

func (b *idleBody) Read(p []byte) (int, error) {
	now := time.Now()
	next, idle, slow := b.next(now)
	_ = b.rc.SetReadDeadline(next)
	if b.draining.Load() {
		// After the deadline above, so a stop between the two is not
		// undone.
		next, idle, slow = now.Add(drainWait), true, false
		_ = b.rc.SetReadDeadline(next)
	}
	n, err := b.r.Read(p)
	b.got += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		b.idled, b.slow = idle, slow
	}
	return n, err
}

// cut is the 408 of an upload cut by the idle timeout or the minimum
// rate, after which the connection is closed; nil for any other failure.
func (b *idleBody) cut(cfg config.Config) error {
	switch {
	case b.idled:
		return apperr.New(apperr.UploadTooSlow, "No bytes of the file arrived for %s; nothing was stored. Resend the whole file.",
			cfg.UploadIdleTimeout)
	case b.slow:
		return apperr.New(apperr.UploadTooSlow, "The file arrived slower than %d bytes a second after the first %s (%d bytes in %s); "+
			"nothing was stored. Resend the whole file, on a better connection if one can be had.",
			cfg.UploadMinRate, cfg.UploadRateGrace, b.got, time.Since(b.start).Round(time.Second))
	}
	return nil
}

// uploadQuota refuses, before its body is read, an upload that would take
// its key past the bytes it may attach to the restaurant this UTC day
// (FOODSAFE_UPLOAD_QUOTA_BYTES): a 429 upload-quota-exceeded whose
// Retry-After is the next UTC midnight. A declared length (the file's, as far as known) is
// checked whole; a chunked upload of unknown length passes while the key
// is under its quota. Uploads checked at once each pass on the count
// before any of them, so a key may end a day over its quota by at most
// FOODSAFE_UPLOADS_PER_KEY files. A replay (replay says whether the file
// is already stored with these bytes) stores nothing and always passes,
// so a device that lost the answer of its last upload of the day reads it.
// parked is the bytes of the key's open resumable uploads on the
// restaurant, counted as used when a new one is created (openUploads).
func (a *API) uploadQuota(c *gin.Context, restaurant string, length, parked int64, replay func(context.Context) (bool, error)) error {
	quota := a.cfg.UploadQuotaBytes
	if quota == 0 {
		return nil
	}
	ctx, now := c.Request.Context(), a.now()
	used, err := a.store.UploadQuotaUsed(ctx, restaurant, principal(c).KeyID, now)
	if err != nil {
		return err
	}
	if used < quota && used+parked+max(length, 0) <= quota {
		return nil
	}
	if replayed, err := replay(ctx); err != nil || replayed {
		return err
	}
	y, m, d := now.UTC().Date()
	wait := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now)
	c.Header("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
	open := ""
	if parked > 0 {
		open = fmt.Sprintf(" and holds %d bytes in resumable uploads not yet completed (complete or cancel them to free them)", parked)
	}
	return apperr.New(apperr.UploadQuotaExceeded, "This key has attached %d bytes of files to restaurant %s today (UTC)%s, "+
		"and may attach %d a day; this file (%s) would take it past them. Nothing was stored; retry after the seconds in "+
		"Retry-After, when the day turns (UTC). Other keys are not affected.", used, restaurant, open, quota, declaredLength(length))
}

// declaredLength says the upload's length, for a refusal.
func declaredLength(n int64) string {
	if n >= 0 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	return "length not declared"
}

// quotaCountTimeout bounds counting a stored file against the quota,
// which no longer ends with its request.
const quotaCountTimeout = 5 * time.Second

// countUpload adds a file just stored to its key's bytes of the day. The
// file is stored whatever happens here: a failure is logged, not
// answered, and the day's count misses the file. It runs whether or not
// the client is still there (a client that closes as soon as its file is
// stored must not have it uncounted), bounded by quotaCountTimeout.
func (a *API) countUpload(c *gin.Context, restaurant string, bytes int64) {
	if a.cfg.UploadQuotaBytes == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), quotaCountTimeout)
	defer cancel()
	if err := a.store.UploadQuotaAdd(ctx, restaurant, principal(c).KeyID, a.now(), bytes); err != nil {
		a.logFailure(c.Request.Context(), requestID(c), routeOf(c), fmt.Errorf("counting an upload against the quota: %w", err))
	}
}

// resumePreemptWait bounds how long a request for a resumable upload
// waits for the stale request it stopped to commit its bytes and end.
const resumePreemptWait = 10 * time.Second

// resumeRequests are the requests of this process sending bytes to an
// upload, by upload: a new request for an upload stops the one before it
// (a client resumes because it gave up on that one, whose connection may
// not be known dead for FOODSAFE_UPLOAD_IDLE_TIMEOUT), which commits the
// bytes it received and frees its upload slot at once. A stale request
// on another replica is not reached: it ends by its idle timeout, and
// the database's conditional offset keeps the two from both appending.
type resumeRequests struct {
	mu sync.Mutex
	m  map[string]*resumeRequest
}

type resumeRequest struct {
	stop func()
	done chan struct{}
}

func newResumeRequests() *resumeRequests { return &resumeRequests{m: map[string]*resumeRequest{}} }

// enter registers the request reading body as the one sending to
// upload, after stopping the one before it; leave frees its upload slot
// (release) before it says the request has ended, so the request that
// stops it finds the slot free. A stopped request keeps the bytes
// already in its connection's buffer (idleBody.stop), then ends.
func (r *resumeRequests) enter(upload string, body *idleBody, release func()) (leave func()) {
	r.preempt(upload)
	me := &resumeRequest{stop: body.stop, done: make(chan struct{})}
	r.mu.Lock()
	r.m[upload] = me
	r.mu.Unlock()
	return func() {
		release()
		r.mu.Lock()
		if r.m[upload] == me {
			delete(r.m, upload)
		}
		r.mu.Unlock()
		close(me.done)
	}
}

// preempt stops the request sending to upload, if any, and waits (at
// most resumePreemptWait) for it to end; it says whether there was one.
func (r *resumeRequests) preempt(upload string) bool {
	r.mu.Lock()
	old := r.m[upload]
	r.mu.Unlock()
	if old == nil {
		return false
	}
	old.stop()
	select {
	case <-old.done:
	case <-time.After(resumePreemptWait):
	}
	return true
}
