package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// lister reads GET /v1/changes: which of the key's streams changed since
// the position the target keeps, each with its head.
type lister struct{ *session }

// errPositionRefused: the server refused the kept GET /v1/changes
// position (its data was restored, or its cursor key changed).
var errPositionRefused = errors.New("the kept changes position was refused")

// list reads GET /v1/changes to its last page from the position
// the target keeps (every stream that holds anything, on a first run):
// the streams that changed, with their heads, and the position of the
// next listing. force (a kept position the server refused: its data was
// restored, or its cursor key changed) asks for every listed stream to be
// walked, whatever head the target holds; with toFeed, a refused position
// is errPositionRefused instead, for the key-wide feed to rebuild from.
func (s lister) list(ctx context.Context, toFeed bool) (map[targets.StreamKey]int64, string, bool, error) {
	cursor, err := s.t.Streams.ChangesPosition(ctx, s.o.scope())
	if err != nil {
		return nil, "", false, err
	}
	listed := map[targets.StreamKey]int64{}
	force := false
	for pages := 0; ; pages++ {
		var page partnerapi.ChangesPage
		err := s.get(ctx, "/v1/changes", pageQuery(cursor, PageSize), &page)
		switch {
		case err == nil:
		case cursor != "" && partnerapi.IsStatus(err, 400) && !force && toFeed:
			s.log.Warn("changes position refused; reading every record again through the key-wide feed", "error", err.Error())
			return nil, "", false, errPositionRefused
		case cursor != "" && partnerapi.IsStatus(err, 400) && !force:
			s.log.Warn("changes position refused; listing every stream and walking each from its own cursor", "error", err.Error())
			cursor, force, listed = "", true, map[targets.StreamKey]int64{}
			continue
		default:
			return nil, "", false, err
		}
		for _, c := range page.Data {
			head, err := position(c.Head)
			if err != nil {
				return nil, "", false, fmt.Errorf("GET /v1/changes: stream %s of %s has a malformed head %q", c.Stream, c.RestaurantID, c.Head)
			}
			listed[targets.StreamKey{Restaurant: c.RestaurantID, Stream: c.Stream}] = head
		}
		switch {
		case page.NextCursor != nil:
			cursor = *page.NextCursor
		case page.ChangesCursor == nil || *page.ChangesCursor == "":
			return nil, "", false, fmt.Errorf("the last page of GET /v1/changes carries no changesCursor")
		default:
			return listed, *page.ChangesCursor, force, nil
		}
	}
}
