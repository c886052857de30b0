package targets

import (
	"context"
	"database/sql"
	"strings"
)

// A page of the key-wide feed touches hundreds of streams: their states
// are read in one statement inside the page's transaction (States) and
// written back in a few (PutStates, PutHeads), so the page costs the
// target a bounded number of round trips and one transaction, whatever
// the streams it ends.

// statesChunk bounds the streams of one statement (two or fifteen
// parameters each: far below SQLite's and PostgreSQL's limits).
const statesChunk = 500

// States reads, with the page, the state of each of keys (the zero state
// for a stream never synced).
func (p *Page) States(ctx context.Context, keys []StreamKey) (map[StreamKey]StreamState, error) {
	out := make(map[StreamKey]StreamState, len(keys))
	for start := 0; start < len(keys); start += statesChunk {
		chunk := keys[start:min(len(keys), start+statesChunk)]
		args := make([]any, 0, 2*len(chunk))
		for _, k := range chunk {
			args = append(args, k.Restaurant, k.Stream)
		}
		rows, err := p.tx.QueryContext(ctx, p.t.d.q(`SELECT restaurant_id, stream, changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error
			FROM sync_state WHERE (restaurant_id, stream) IN (VALUES `+rowsOf("(?, ?)", len(chunk))+`)`), args...)
		if err != nil {
			return nil, err
		}
		if err := scanStates(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanStates(rows *sql.Rows, out map[StreamKey]StreamState) error {
	defer rows.Close()
	for rows.Next() {
		var k StreamKey
		var s StreamState
		var changes, walk, kind, lastErr sql.NullString
		if err := rows.Scan(&k.Restaurant, &k.Stream, &changes, &walk, &kind, &s.WalkGen, &s.WindowFrom, &s.WindowTo, &s.PassTo,
			&s.CoveredTo, &s.HighWater, &s.Pages, &s.Applied, &s.LastSyncedAt, &lastErr); err != nil {
			return err
		}
		s.ChangesCursor, s.WalkCursor, s.WalkKind, s.LastError = changes.String, walk.String, kind.String, lastErr.String
		out[k] = s
	}
	return rows.Err()
}

// PutStates writes, with the page, the state of each stream of states.
func (p *Page) PutStates(ctx context.Context, states map[StreamKey]StreamState) error {
	keys := make([]StreamKey, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	for start := 0; start < len(keys); start += statesChunk {
		chunk := keys[start:min(len(keys), start+statesChunk)]
		args := make([]any, 0, 15*len(chunk))
		for _, k := range chunk {
			s := states[k]
			args = append(args, k.Restaurant, k.Stream, nullString(s.ChangesCursor), nullString(s.WalkCursor), nullString(s.WalkKind), s.WalkGen,
				s.WindowFrom, s.WindowTo, s.PassTo, s.CoveredTo, s.HighWater, s.Pages, s.Applied, s.LastSyncedAt, nullString(s.LastError))
		}
		_, err := p.tx.ExecContext(ctx, p.t.d.q(`INSERT INTO sync_state (restaurant_id, stream, changes_cursor, walk_cursor, walk_kind, walk_gen, window_from, window_to, pass_to, covered_to, high_water, pages, applied, last_synced_at, last_error)
			VALUES `+rowsOf("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", len(chunk))+`
			ON CONFLICT (restaurant_id, stream) DO UPDATE SET changes_cursor = excluded.changes_cursor, walk_cursor = excluded.walk_cursor,
				walk_kind = excluded.walk_kind, walk_gen = excluded.walk_gen, window_from = excluded.window_from, window_to = excluded.window_to,
				pass_to = excluded.pass_to, covered_to = excluded.covered_to, high_water = excluded.high_water, pages = excluded.pages,
				applied = excluded.applied, last_synced_at = excluded.last_synced_at, last_error = excluded.last_error`), args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// PutHeads records, with the page, the head each stream of heads is
// mirrored up to.
func (p *Page) PutHeads(ctx context.Context, heads map[StreamKey]int64) error {
	keys := make([]StreamKey, 0, len(heads))
	for k := range heads {
		keys = append(keys, k)
	}
	for start := 0; start < len(keys); start += statesChunk {
		chunk := keys[start:min(len(keys), start+statesChunk)]
		args := make([]any, 0, 3*len(chunk))
		for _, k := range chunk {
			args = append(args, k.Restaurant, k.Stream, heads[k])
		}
		_, err := p.tx.ExecContext(ctx, p.t.d.q(`INSERT INTO stream_heads (restaurant_id, stream, head) VALUES `+rowsOf("(?, ?, ?)", len(chunk))+`
			ON CONFLICT (restaurant_id, stream) DO UPDATE SET head = excluded.head`), args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// rowsOf is n copies of row, comma-separated: the VALUES of a statement
// of n rows.
func rowsOf(row string, n int) string {
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}
