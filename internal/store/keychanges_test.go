package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// The key triggers (migration 00021) name the keys a statement changed,
// one notification each, whichever table and statement changed them; a
// statement over more than 100 keys, and a TRUNCATE, say '*'; a statement
// that changed nothing says nothing.
func TestKeyChangeNotifications(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = listener.Close(ctx) })
	_, err = listener.Exec(ctx, "LISTEN foodsafe_keys")
	require.NoError(t, err)
	db, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close(ctx) })
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := db.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	// heard runs sql, then a marker notification, and returns the payloads
	// heard before the marker, sorted (NOTIFY delivers in commit order).
	heard := func(sql string, args ...any) []string {
		t.Helper()
		exec(sql, args...)
		exec(`SELECT pg_notify('foodsafe_keys', 'marker')`)
		var got []string
		for {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			n, err := listener.WaitForNotification(wctx)
			cancel()
			require.NoError(t, err, "waiting for the notifications of %s", sql)
			if n.Payload == "marker" {
				slices.Sort(got)
				return got
			}
			got = append(got, n.Payload)
		}
	}
	exec(`INSERT INTO restaurants (id) VALUES ('r1'), ('r2')`)
	key := func(pub string) string {
		return `INSERT INTO api_keys (public_id, secret_sha256, label) VALUES ('` + pub + `', sha256('x'), 'k')`
	}

	require.Equal(t, []string{"keyaaaaaaaaa"}, heard(key("keyaaaaaaaaa")))
	require.Equal(t, []string{"keybbbbbbbbb"}, heard(key("keybbbbbbbbb")))
	require.Equal(t, []string{"keyaaaaaaaaa", "keybbbbbbbbb"}, heard(`INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT k.id, r.id, 'areas:read' FROM api_keys k, restaurants r`), "one per key, however many rows")
	require.Equal(t, []string{"keyaaaaaaaaa"}, heard(`DELETE FROM key_grants WHERE restaurant_id = 'r2'
		AND key_id = (SELECT id FROM api_keys WHERE public_id = 'keyaaaaaaaaa')`))
	require.Equal(t, []string{"keybbbbbbbbb"}, heard(`UPDATE key_grants SET scope = 'areas:write'
		WHERE key_id = (SELECT id FROM api_keys WHERE public_id = 'keybbbbbbbbb') AND restaurant_id = 'r1'`))
	require.Equal(t, []string{"keyaaaaaaaaa"}, heard(`UPDATE api_keys SET revoked_at = now() WHERE public_id = 'keyaaaaaaaaa'`))
	require.Equal(t, []string{"keybbbbbbbbb", "keyccccccccc"}, heard(`UPDATE api_keys SET public_id = 'keyccccccccc' WHERE public_id = 'keybbbbbbbbb'`),
		"a key renamed by hand: both names")
	require.Empty(t, heard(`UPDATE api_keys SET label = 'x' WHERE public_id = 'nosuchkey000'`), "no row, no notification")
	require.Equal(t, []string{"keyccccccccc"}, heard(`DELETE FROM api_keys WHERE public_id = 'keyccccccccc'`),
		"a key deleted with its grants: its own name, once")

	require.Equal(t, []string{"*"}, heard(`INSERT INTO api_keys (public_id, secret_sha256, label)
		SELECT 'bulk' || lpad(g::text, 8, '0'), sha256('x'), 'bulk' FROM generate_series(1, 101) g`))
	require.Equal(t, []string{"*"}, heard(`UPDATE api_keys SET label = 'bulk2' WHERE label = 'bulk'`), "more than 100 keys")
	require.Len(t, heard(`UPDATE api_keys SET label = 'bulk3' WHERE public_id IN (SELECT public_id FROM api_keys WHERE label = 'bulk2' LIMIT 100)`), 100)
	require.Equal(t, []string{"*"}, heard(`TRUNCATE key_grants`))
	require.Equal(t, []string{"*"}, heard(`TRUNCATE api_keys CASCADE`))
}
