package partnerapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// budget is the request budget the last answer announced in its
// X-RateLimit-* headers, and the pacing it asks for.
type budget struct {
	mu        sync.Mutex
	limit     int       // X-RateLimit-Limit of the last answer (0: unknown)
	remaining int       // X-RateLimit-Remaining of the last answer
	resetAt   time.Time // when the window of the last answer resets
}

// note keeps the X-RateLimit-* headers of an answer.
func (b *budget) note(h http.Header) {
	limit, err1 := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining, err2 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err3 := strconv.Atoi(h.Get("X-RateLimit-Reset"))
	if err1 != nil || err2 != nil || err3 != nil {
		return
	}
	b.mu.Lock()
	b.limit, b.remaining, b.resetAt = limit, remaining, time.Now().Add(time.Duration(reset)*time.Second)
	b.mu.Unlock()
}

// get is remaining of limit (0, 0 when unknown).
func (b *budget) get() (remaining, limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remaining, b.limit
}

// paceShare is the share of the budget spent at full speed; below it the
// rest of the window's budget is spread evenly over the time left.
const paceShare = 10

// wait is the pause before the next request that keeps the budget from
// being exceeded: none while more than a tenth of the budget remains, then
// what is left of the window spread evenly over the requests left, and at
// nothing left until the window resets (spent).
func (b *budget) wait() (wait time.Duration, spent bool) {
	b.mu.Lock()
	limit, remaining, left := b.limit, b.remaining, time.Until(b.resetAt)
	b.mu.Unlock()
	if limit == 0 || left <= 0 || remaining > limit/paceShare {
		return 0, false
	}
	if remaining <= 0 {
		// X-RateLimit-Reset is whole seconds and the server's window may
		// end up to a second after it: wait that second too.
		return left + time.Second, true
	}
	return left / time.Duration(remaining+1), false
}

// reset forgets a spent window once it has passed: the next answer tells
// the new budget.
func (b *budget) reset() {
	b.mu.Lock()
	b.limit = 0
	b.mu.Unlock()
}
