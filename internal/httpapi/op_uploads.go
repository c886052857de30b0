package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// uploadSlots caps the uploads in progress, per key and per process, so
// that slow or stalled clients cannot hold every connection, buffer and
// object-store stream of a replica. Beyond a key's share the answer is a
// 429, beyond the process's a 503, both with Retry-After.
type uploadSlots struct {
	perKey, total int
	mu            sync.Mutex
	running       int
	byKey         map[int64]int
}

func newUploadSlots(perKey, total int) *uploadSlots {
	return &uploadSlots{perKey: perKey, total: total, byKey: map[int64]int{}}
}

// uploadRetryAfter is the Retry-After, in seconds, of a refused upload:
// uploads end within seconds when their clients are sending.
const uploadRetryAfter = "5"

// acquire takes a slot for key or says why not; release gives it back.
func (s *uploadSlots) acquire(key int64) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.byKey[key] >= s.perKey:
		return nil, apperr.New(apperr.RateLimited,
			"This key already has %d uploads in progress, the most it may have at once; retry after the seconds in Retry-After.", s.perKey)
	case s.running >= s.total:
		return nil, apperr.New(apperr.DependencyUnavailable,
			"The server is receiving the most uploads it takes at once (%d); retry after the seconds in Retry-After.", s.total)
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

// uploadSlot takes a slot for the request's key; a refusal carries its
// Retry-After header.
func (a *API) uploadSlot(c *gin.Context) (func(), error) {
	release, err := a.uploads.acquire(principal(c).KeyID)
	if err != nil {
		c.Header("Retry-After", uploadRetryAfter)
	}
	return release, err
}

// idleBody reads an upload's body with two deadlines on the connection:
// the whole upload must end by end (FOODSAFE_UPLOAD_TIMEOUT), and no read
// may wait longer than idle (FOODSAFE_UPLOAD_IDLE_TIMEOUT) for its next
// bytes, so a stalled client gives its slot back within seconds.
type idleBody struct {
	r     io.Reader
	rc    *http.ResponseController
	idle  time.Duration
	end   time.Time
	idled bool
}

func (b *idleBody) Read(p []byte) (int, error) {
	next := time.Now().Add(b.idle)
	if next.After(b.end) {
		next = b.end
	}
	_ = b.rc.SetReadDeadline(next)
	n, err := b.r.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && next.Before(b.end) {
		b.idled = true
	}
	return n, err
}

// errUploadStalled is the 400 of an upload that sent nothing for the idle
// timeout; the connection is closed after it.
func (a *API) errUploadStalled() error {
	return apperr.New(apperr.Invalid, "No bytes of the file arrived for %s; nothing was stored. Resend the whole file.",
		a.cfg.UploadIdleTimeout)
}
