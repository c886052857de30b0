package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
)

// errFatal marks failures that end the whole run (the key no longer
// works): every other stream would fail the same way.
type errFatal struct{ error }

func (e errFatal) Unwrap() error { return e.error }

// IsFatal reports whether a run's error means no later run can succeed
// either (the key was refused), so a --every loop should stop.
func IsFatal(err error) bool {
	var fe errFatal
	return errors.As(err, &fe)
}

// StopError is why a run ended before its end of its own accord: its
// deadline passed, or too many requests failed in a row. Everything
// applied before stays; Resume says where the next run takes up. It is
// not fatal: --every tries again at its next interval.
type StopError struct {
	Deadline time.Duration // the deadline that passed (0: not the reason)
	Failures int           // the requests that failed in a row (0: not the reason)
	Last     error         // the last of them
	Resume   string        // where the next run resumes (Syncer.NextRun)
}

func (e *StopError) Error() string {
	resume := e.Resume
	if resume == "" {
		resume = resumeStreams
	}
	if e.Deadline > 0 {
		return fmt.Sprintf("run stopped: its deadline of %s passed (--deadline); %s", e.Deadline, resume)
	}
	return fmt.Sprintf("run stopped: %d requests in a row failed after their retries (--max-failures); %s; the last: %v", e.Failures, resume, e.Last)
}

// resumeStreams is where the next run resumes when no key-wide listing is
// under way.
const resumeStreams = "every page applied is kept: the next run lists the streams that changed since the last complete run and resumes each unfinished one after its last applied page"

// resumeFeed is where it resumes when one is.
const resumeFeed = "every page applied is kept: the next run resumes the first listing of every record (GET /v1/records) after its last applied page"

// resumeFresh is where it resumes when a first sync applied nothing.
const resumeFresh = "no page of the first listing was applied: the next run starts it from its beginning"

// stopped is the *StopError that ended the run of ctx, if one did.
func stopped(ctx context.Context) *StopError {
	var se *StopError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// isCanceled reports whether err is only the end of its context.
func isCanceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fatalIfUnauthorized makes a 401 end the run: the key no longer works.
func fatalIfUnauthorized(err error) error {
	if partnerapi.IsStatus(err, 401) {
		return errFatal{err}
	}
	return err
}
