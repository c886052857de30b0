package targets

import (
	"context"
	"database/sql"
)

// StreamStatus is what `foodsafe-sync status` prints for one stream.
type StreamStatus struct {
	Restaurant   string `json:"restaurant"`
	Stream       string `json:"stream"`
	Rows         int64  `json:"rows"`              // rows mirrored (records, or deliveries)
	Deleted      int64  `json:"deleted,omitempty"` // of which tombstones (mark mode)
	LastSyncedAt *int64 `json:"lastSyncedAt"`      // epoch ms of the last complete walk or pass
	InProgress   bool   `json:"inProgress"`        // a walk or delivery window is under way
	Incremental  bool   `json:"incremental"`       // a changes cursor (or a delivery high-water mark) is kept
	LastError    string `json:"lastError,omitempty"`
}

// Status is the whole target's state.
type Status struct {
	Streams   []StreamStatus `json:"streams"`
	Files     int64          `json:"files"`
	FileBytes int64          `json:"fileBytes"`
}

// Status reads what is mirrored and when each stream last synced.
func (t *Target) Status(ctx context.Context) (Status, error) {
	var st Status
	rows, err := t.db.QueryContext(ctx, `SELECT restaurant_id, stream, changes_cursor, walk_cursor, walk_kind, window_from, high_water, covered_to, last_synced_at, last_error
		FROM sync_state ORDER BY restaurant_id, stream`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var s StreamStatus
		var changes, walk, kind, lastErr sql.NullString
		var windowFrom, highWater, coveredTo sql.NullInt64
		if err := rows.Scan(&s.Restaurant, &s.Stream, &changes, &walk, &kind, &windowFrom, &highWater, &coveredTo, &s.LastSyncedAt, &lastErr); err != nil {
			rows.Close()
			return st, err
		}
		// A stream the key-wide feed began and has not ended has no walk
		// cursor of its own: the feed's is kept in mirror_meta.
		s.InProgress = walk.Valid || windowFrom.Valid || kind.String == FeedKind || kind.String == FeedNewKind
		s.Incremental = changes.Valid || coveredTo.Valid
		s.LastError = lastErr.String
		st.Streams = append(st.Streams, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, err
	}
	for i := range st.Streams {
		s := &st.Streams[i]
		if s.Stream == "files" {
			continue
		}
		tbl := "deliveries"
		if s.Stream != "deliveries" {
			if !collectionName.MatchString(s.Stream) {
				continue
			}
			tbl = quotedTable(s.Stream)
			if err := t.db.QueryRowContext(ctx, t.d.q(`SELECT count(*) FROM `+tbl+` WHERE restaurant_id = ? AND deleted`), s.Restaurant).Scan(&s.Deleted); err != nil {
				return st, err
			}
		}
		if err := t.db.QueryRowContext(ctx, t.d.q(`SELECT count(*) FROM `+tbl+` WHERE restaurant_id = ?`), s.Restaurant).Scan(&s.Rows); err != nil {
			return st, err
		}
	}
	err = t.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(byte_length), 0) FROM files`).Scan(&st.Files, &st.FileBytes)
	return st, err
}
