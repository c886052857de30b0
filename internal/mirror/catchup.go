package mirror

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// catchUpMark prefixes, in the target, the cursor of a feed of what
// changed under way, which tells it from a first listing's.
const catchUpMark = "since:"

// catchUpReader brings the mirror from its kept position to now through
// the key-wide feed of what changed (GET /v1/records?since=, in the
// manner of CouchDB's _changes?include_docs=true&since=): the records,
// tombstones and deliveries written since, of every stream written since,
// many streams a page, so a catch-up costs a request per FeedPageSize
// changes instead of a walk (and a request) per changed stream. Each page
// is applied as the first listing's are (feedReader.applyPage), as a
// changes walk: in one transaction with the streams it ends (their
// changes cursor and head) and the feed's next cursor, so a run stopped
// inside it resumes after its last applied page; its last page's
// changesCursor becomes the mirror's position, with that page.
type catchUpReader struct{ *session }

// read catches up when the run's scope is the key's (the feed reads
// every stream) and the mirror has a position, or a catch-up is under
// way. It reports whether it ran to its end and the position it ended
// at; false with no error when the run is to list changes instead: the
// server refused the position (400: the key's grants changed, or its data
// was restored; the listing then starts over or is refused in its turn)
// or has no feed (404).
func (s catchUpReader) read(ctx context.Context, r *pass) (bool, string, error) {
	if !s.o.feedApplies() {
		return false, "", nil
	}
	cursor, err := s.t.Streams.FeedCursor(ctx)
	if err != nil {
		return false, "", err
	}
	position, err := s.t.Streams.ChangesPosition(ctx, s.o.scope())
	if err != nil || position == "" || (cursor != "" && !strings.HasPrefix(cursor, catchUpMark)) {
		return false, "", err
	}
	cursor = strings.TrimPrefix(cursor, catchUpMark)
	if cursor != "" {
		s.log.Info("resuming the catch-up after its last applied page")
	}
	restarted := false
	for {
		q := url.Values{"limit": {strconv.Itoa(FeedPageSize)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		} else {
			q.Set("since", position)
		}
		var page partnerapi.FeedPage
		err := s.get(ctx, "/v1/records", q, &page)
		switch {
		case err == nil:
		case cursor != "" && partnerapi.IsStatus(err, 400) && !restarted:
			s.log.Warn("the catch-up's cursor was refused (expired?); catching up again from the kept position", "error", err.Error())
			cursor, restarted = "", true
			continue
		case cursor == "" && (partnerapi.IsStatus(err, 400) || partnerapi.IsStatus(err, 404)):
			s.log.Warn("the feed of what changed refused the kept position; listing the changed streams instead", "error", err.Error())
			return false, "", s.t.Streams.RestartFeed(ctx)
		default:
			return false, "", err
		}
		if err := feedReader(s).applyPage(ctx, r, page, true); err != nil {
			return false, "", err
		}
		if page.NextCursor == nil {
			return true, *page.ChangesCursor, nil
		}
		cursor = *page.NextCursor
	}
}

// caughtUp is what a run listed after a catch-up: nothing (every stream
// written since the position came with the feed), the position the feed
// ended at.
func caughtUp() map[targets.StreamKey]int64 { return map[targets.StreamKey]int64{} }
