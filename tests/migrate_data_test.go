package tests

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
	"github.com/foodsafe/foodsafe/sql/migrations"
)

// Migration 00013 turns data from jsonb into json holding jsonb's text
// form, the same JSON value as before, on records and on versions; a
// tombstone stays without data.
func TestMigrationKeepsDataValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.EmptyURL(t)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	sqlDB := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { sqlDB.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 12)
	require.NoError(t, err)

	const seed = `{"name": "a, b: \"c\" {d} [e]", "isDeleted": false, "n": [1, 2.50, -0, 1e2], "o": {"k": {}, "l": []},
	               "t": "tab\tnew\nline \\ back\\slash", "u": "é \u2028 😀"}`
	_, err = sqlDB.ExecContext(ctx, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', now())`)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256)
		VALUES ('r1', 'areas', 1, 'a1', 'm1', false, $1::jsonb, 1, 1, 1, '\x00'),
		       ('r1', 'areas', 2, 'a2', 'm2', true, NULL, 1, 1, 1, '\x00')`, seed)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `
		INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
		                     captured_at, received_at, payload_version)
		SELECT restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version
		FROM record_changes`)
	require.NoError(t, err)
	_, err = p.Up(ctx)
	require.NoError(t, err)

	const want = `{"n": [1, 2.50, 0, 100], "o": {"k": {}, "l": []}, "t": "tab\tnew\nline \\ back\\slash", "u": "é ` + "\u2028" + ` 😀", ` +
		`"name": "a, b: \"c\" {d} [e]", "isDeleted": false}`
	for _, table := range []string{"records", "record_changes"} {
		var typ string
		require.NoError(t, sqlDB.QueryRowContext(ctx,
			`SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'data'`, table).Scan(&typ))
		require.Equal(t, "json", typ, table)
		var got string
		var equal bool
		require.NoError(t, sqlDB.QueryRowContext(ctx,
			`SELECT data::text, data::jsonb = $1::jsonb FROM `+table+` WHERE record_id = 'a1'`, seed).Scan(&got, &equal))
		require.True(t, equal, "%s: the same JSON value", table)
		require.Equal(t, want, got, table)
		var tombstone *string
		require.NoError(t, sqlDB.QueryRowContext(ctx, `SELECT data::text FROM `+table+` WHERE record_id = 'a2'`).Scan(&tombstone))
		require.Nil(t, tombstone, table)
	}
}
