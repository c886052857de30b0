package targets

import (
	"context"
	"database/sql"
	"errors"
)

// Streams is what the target keeps of each stream (a collection of a
// restaurant, or its deliveries: sync_state, stream_heads) and of the
// key-wide listings (mirror_meta), read and written outside a page's
// transaction; a Page writes the same inside one.
type Streams struct{ *conn }

// StreamKey names a stream of a restaurant: a collection, or deliveries.
type StreamKey struct{ Restaurant, Stream string }

// FeedKind marks, in a stream's WalkKind, a stream the key-wide feed under
// way has begun and not yet ended; FeedNewKind one that held nothing here
// when the feed began it.
const (
	FeedKind    = "feed"
	FeedNewKind = "feed-new"
)

// StreamState is what the target remembers of one stream: a collection
// of a restaurant, or its deliveries.
type StreamState struct {
	ChangesCursor string // "" before the first complete walk
	WalkCursor    string // "" when no walk is under way
	WalkKind      string // full, changes or rebuild, while a walk is under way
	WalkGen       int64
	WindowFrom    *int64 // deliveries: the window being walked
	WindowTo      *int64
	PassTo        *int64 // deliveries: the end of the pass the window belongs to
	CoveredTo     *int64 // deliveries: the end of the last complete pass
	HighWater     *int64 // deliveries: newest stored occurredAt after the last pass
	Pages         int64
	Applied       int64
	LastSyncedAt  *int64
	LastError     string
}

// State reads a stream's state; a stream never synced has the zero state.
func (ss *Streams) State(ctx context.Context, restaurantID, stream string) (StreamState, error) {
	var s StreamState
	var changes, walk, kind, lastErr sql.NullString
	err := ss.db.QueryRowContext(ctx, ss.d.q(`SELECT changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error
		FROM sync_state WHERE restaurant_id = ? AND stream = ?`), restaurantID, stream).
		Scan(&changes, &walk, &kind, &s.WalkGen, &s.WindowFrom, &s.WindowTo, &s.PassTo, &s.CoveredTo, &s.HighWater, &s.Pages, &s.Applied, &s.LastSyncedAt, &lastErr)
	if errors.Is(err, sql.ErrNoRows) {
		return StreamState{}, nil
	}
	s.ChangesCursor, s.WalkCursor, s.WalkKind, s.LastError = changes.String, walk.String, kind.String, lastErr.String
	return s, err
}

// putState writes a stream's state inside tx (or on its own, given the
// database).
func putState(ctx context.Context, tx execer, d dialect, restaurantID, stream string, s StreamState) error {
	_, err := tx.ExecContext(ctx, d.q(`INSERT INTO sync_state (restaurant_id, stream, changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (restaurant_id, stream) DO UPDATE SET changes_cursor = excluded.changes_cursor, walk_cursor = excluded.walk_cursor,
			walk_kind = excluded.walk_kind, walk_gen = excluded.walk_gen, window_from = excluded.window_from, window_to = excluded.window_to,
			pass_to = excluded.pass_to, covered_to = excluded.covered_to, high_water = excluded.high_water, pages = excluded.pages,
			applied = excluded.applied, last_synced_at = excluded.last_synced_at, last_error = excluded.last_error`),
		restaurantID, stream, nullString(s.ChangesCursor), nullString(s.WalkCursor), nullString(s.WalkKind), s.WalkGen,
		s.WindowFrom, s.WindowTo, s.PassTo, s.CoveredTo, s.HighWater, s.Pages, s.Applied, s.LastSyncedAt, nullString(s.LastError))
	return err
}

// SetError records a stream's last failure (or clears it with "") outside
// any page transaction.
func (ss *Streams) SetError(ctx context.Context, restaurantID, stream, msg string) error {
	s, err := ss.State(ctx, restaurantID, stream)
	if err != nil {
		return err
	}
	s.LastError = msg
	// One statement: no transaction needed (and SQLite has one connection,
	// which State above must not be waiting for).
	return putState(ctx, ss.db, ss.d, restaurantID, stream, s)
}

// ClearError clears a stream's recorded failure, if it has a state row.
func (ss *Streams) ClearError(ctx context.Context, restaurantID, stream string) error {
	_, err := ss.db.ExecContext(ctx, ss.d.q(`UPDATE sync_state SET last_error = NULL WHERE restaurant_id = ? AND stream = ?`), restaurantID, stream)
	return err
}

// Heads reads the head every stream was last mirrored up to.
func (ss *Streams) Heads(ctx context.Context) (map[StreamKey]int64, error) {
	rows, err := ss.db.QueryContext(ctx, `SELECT restaurant_id, stream, head FROM stream_heads`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[StreamKey]int64{}
	for rows.Next() {
		var k StreamKey
		var head int64
		if err := rows.Scan(&k.Restaurant, &k.Stream, &head); err != nil {
			return nil, err
		}
		out[k] = head
	}
	return out, rows.Err()
}

// PutHead records, on its own, that a stream is mirrored up to head.
func (ss *Streams) PutHead(ctx context.Context, restaurantID, stream string, head int64) error {
	return putHead(ctx, ss.db, ss.d, restaurantID, stream, head)
}

// putHead records that a stream is mirrored up to head (inside tx, or
// on its own given the database).
func putHead(ctx context.Context, tx execer, d dialect, restaurantID, stream string, head int64) error {
	_, err := tx.ExecContext(ctx, d.q(`INSERT INTO stream_heads (restaurant_id, stream, head) VALUES (?, ?, ?)
		ON CONFLICT (restaurant_id, stream) DO UPDATE SET head = excluded.head`), restaurantID, stream, head)
	return err
}

// Unfinished are the streams a previous run left with a walk under way or
// a failure: walked again whatever GET /v1/changes says.
func (ss *Streams) Unfinished(ctx context.Context) (map[StreamKey]bool, error) {
	rows, err := ss.db.QueryContext(ctx, `SELECT restaurant_id, stream FROM sync_state
		WHERE stream <> 'files' AND (walk_cursor IS NOT NULL OR last_error IS NOT NULL OR window_from IS NOT NULL)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[StreamKey]bool{}
	for rows.Next() {
		var k StreamKey
		if err := rows.Scan(&k.Restaurant, &k.Stream); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// ChangesPosition is the GET /v1/changes position kept by the last
// complete run, when it mirrored the same scope ("" otherwise).
func (ss *Streams) ChangesPosition(ctx context.Context, scope string) (string, error) {
	var pos, had string
	err := ss.db.QueryRowContext(ctx, `SELECT p.value, s.value FROM mirror_meta p, mirror_meta s
		WHERE p.name = 'changes_position' AND s.name = 'changes_scope'`).Scan(&pos, &had)
	if errors.Is(err, sql.ErrNoRows) || had != scope {
		return "", nil
	}
	return pos, err
}

// PutChangesPosition keeps the position of the next listing and the scope
// it was listed for.
func (ss *Streams) PutChangesPosition(ctx context.Context, scope, pos string) error {
	return ss.tx(ctx, func(tx *sql.Tx) error { return putChangesPosition(ctx, tx, ss.d, scope, pos) })
}

// putChangesPosition is PutChangesPosition inside tx.
func putChangesPosition(ctx context.Context, tx execer, d dialect, scope, pos string) error {
	for _, kv := range [][2]string{{"changes_position", pos}, {"changes_scope", scope}} {
		if _, err := tx.ExecContext(ctx, d.q(`INSERT INTO mirror_meta (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`), kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// FeedCursor is the cursor of a key-wide first listing (GET /v1/records)
// under way: the feed's nextCursor after its last applied page ("" when
// none is under way).
func (ss *Streams) FeedCursor(ctx context.Context) (string, error) {
	var c string
	err := ss.db.QueryRowContext(ctx, `SELECT value FROM mirror_meta WHERE name = 'feed_cursor'`).Scan(&c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return c, err
}

// putFeedCursor keeps the feed's cursor inside tx, with the page it
// follows ("" removes it: the listing is over, or starts over).
func putFeedCursor(ctx context.Context, tx execer, d dialect, cursor string) error {
	if cursor == "" {
		_, err := tx.ExecContext(ctx, `DELETE FROM mirror_meta WHERE name = 'feed_cursor'`)
		return err
	}
	_, err := tx.ExecContext(ctx, d.q(`INSERT INTO mirror_meta (name, value) VALUES ('feed_cursor', ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`), cursor)
	return err
}

// RestartFeed forgets a key-wide listing under way: its cursor, and the
// streams it had begun without ending them (the next feed begins them
// again with a new generation, so rows only the forgotten one brought are
// dropped when the new one ends their stream).
func (ss *Streams) RestartFeed(ctx context.Context) error {
	return ss.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sync_state SET walk_kind = NULL WHERE walk_kind IN ('feed', 'feed-new')`); err != nil {
			return err
		}
		return putFeedCursor(ctx, tx, ss.d, "")
	})
}

// RestaurantList is the answer of GET /v1/restaurants the last run read,
// as JSON, with its ETag ("" and "" when none is kept): a run sends the
// tag as If-None-Match and plans from this list when the server answers
// 304, so a refresh in which the grants did not change never downloads
// them again.
func (ss *Streams) RestaurantList(ctx context.Context) (etag, list string, err error) {
	err = ss.db.QueryRowContext(ctx, `SELECT t.value, l.value FROM mirror_meta t, mirror_meta l
		WHERE t.name = 'restaurants_etag' AND l.name = 'restaurants_list'`).Scan(&etag, &list)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return etag, list, err
}

// PutRestaurantList keeps the restaurant list a run read and its ETag
// (an answer without one keeps nothing: the next run asks again).
func (ss *Streams) PutRestaurantList(ctx context.Context, etag, list string) error {
	return ss.tx(ctx, func(tx *sql.Tx) error {
		if etag == "" {
			_, err := tx.ExecContext(ctx, `DELETE FROM mirror_meta WHERE name IN ('restaurants_etag', 'restaurants_list')`)
			return err
		}
		for _, kv := range [][2]string{{"restaurants_etag", etag}, {"restaurants_list", list}} {
			if _, err := tx.ExecContext(ctx, ss.d.q(`INSERT INTO mirror_meta (name, value) VALUES (?, ?)
				ON CONFLICT (name) DO UPDATE SET value = excluded.value`), kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
}
