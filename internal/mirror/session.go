package mirror

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// PageSize is the limit of every list request: the largest the API takes,
// so a sync costs the fewest requests. It never changes, because a walk's
// cursors are bound to their limit.
const PageSize = 100

// Options say what to mirror and how.
type Options struct {
	Restaurants []string // empty: every restaurant the key reaches
	Collections []string // empty: every collection the key reads
	Files       bool
	FilesDir    string
	Tombstones  targets.TombstoneMode
	// Overlap is no longer used: deliveries follow the receive-order
	// changes cursor, which misses no late upload. Kept so that command
	// lines that set --overlap still run.
	Overlap time.Duration
	// DeliveriesSince: deliveries that occurred before it (epoch ms) are
	// not mirrored.
	DeliveriesSince int64
	// Deadline bounds each run (0: none). A run that meets it stops where
	// it is, keeping every page applied, and fails: the next run resumes.
	Deadline time.Duration
	// MaxFailures ends a run once that many requests in a row have failed
	// after their own retries (0: no limit). A server that stays down,
	// or fails everything, then costs a few requests' retries instead of
	// every remaining stream's and file's.
	MaxFailures int
	Now         func() time.Time
}

// scope is what a kept changes position was listed for: a position kept
// by a run that mirrored other restaurants or collections says nothing of
// the streams this one adds, so those runs list from the beginning.
func (o *Options) scope() string {
	r, c := slices.Clone(o.Restaurants), slices.Clone(o.Collections)
	slices.Sort(r)
	slices.Sort(c)
	return strings.Join(r, ",") + ";" + strings.Join(c, ",")
}

// feedApplies reports whether this run's scope is what the feed reads:
// every stream of the key. A run narrowed to some restaurants or
// collections walks its streams one by one instead of reading the rest.
func (o *Options) feedApplies() bool {
	return len(o.Restaurants) == 0 && len(o.Collections) == 0
}

// session is what every part of a run shares: the client, whose requests
// are counted against the run's failures in a row, the target, the
// options, the log and the progress display.
type session struct {
	c    *partnerapi.Client
	t    *targets.Target
	o    Options
	log  *slog.Logger
	prog Progress
	// inARow counts the run's requests that failed in a row; stop ends
	// the run with a *StopError.
	inARow int
	stop   context.CancelCauseFunc
}

// get is Client.Get counted against the run's failures in a row.
func (s *session) get(ctx context.Context, path string, q url.Values, out any) error {
	err := s.c.Get(ctx, path, q, out)
	s.tally(ctx, err)
	return err
}

// tally counts a request's outcome once its retries are over: an answer
// the server gave (a success or a 4xx) clears the count, a failure (no
// answer, a 5xx, an answer that is not what the API documents) adds to
// it, and MaxFailures in a row stop the run.
func (s *session) tally(ctx context.Context, err error) {
	var ae *partnerapi.APIError
	var se partnerapi.StatusError
	switch {
	case ctx.Err() != nil:
		return // stopped or interrupted: not the request's failure
	case err == nil, errors.Is(err, partnerapi.ErrURLExpired),
		errors.As(err, &ae) && ae.Status < 500, errors.As(err, &se) && se.Status < 500:
		s.inARow = 0
		return
	}
	s.inARow++
	if s.o.MaxFailures > 0 && s.inARow >= s.o.MaxFailures && s.stop != nil {
		s.stop(&StopError{Failures: s.inARow, Last: err})
	}
}

// progress tells the display about a stream's page, with the budget the
// last answer left.
func (s *session) progress(ev StreamEvent) {
	ev.BudgetRemaining, ev.BudgetLimit = s.c.Budget()
	s.prog.Stream(ev)
}

// pageQuery is a list request's query: the limit, and the cursor if any.
func pageQuery(cursor string, limit int) url.Values {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}
