package tests

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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

// migratedTo is a fresh database migrated up to version (goose's UpTo),
// with its goose provider to go on from there.
func migratedTo(t *testing.T, version int64) (*sql.DB, *goose.Provider) {
	t.Helper()
	cfg, err := pgx.ParseConfig(testdb.EmptyURL(t))
	require.NoError(t, err)
	sqlDB := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { sqlDB.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS)
	require.NoError(t, err)
	_, err = p.UpTo(context.Background(), version)
	require.NoError(t, err)
	return sqlDB, p
}

// Migration 00020 gives the integer fields of stored records and changes
// their plain integer form, however they were stored (the compact text of
// a client, jsonb's spaced text form of rows older than 00013), nested or
// not; only those numbers change (and the spacing of the objects on the
// way to them); other fields that are numbers, strings that read "1.0",
// members of the same name in other collections, plain integers,
// tombstones and compacted changes are left as they were.
func TestMigrationPlainIntegers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlDB, p := migratedTo(t, 19)
	_, err := sqlDB.ExecContext(ctx, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', now())`)
	require.NoError(t, err)
	sha := strings.Repeat("a", 64)
	cases := []struct{ collection, stored, want string }{
		{"equipment", `{"index":1.0,"type":"F","name":"1.0","isDeleted":false,"min":1.0,"max":1E+1}`,
			`{"index":1,"type":"F","name":"1.0","isDeleted":false,"min":1.0,"max":1E+1}`},
		{"equipment", `{"index":3,"type":"F","name":"plain","isDeleted":false,"min":1.0}`,
			`{"index":3,"type":"F","name":"plain","isDeleted":false,"min":1.0}`},
		{"fryer-equipment", `{"index":-0,"name":"minus zero","isDeleted":false}`, `{"index":0,"name":"minus zero","isDeleted":false}`},
		{"cooking-equipment", `{"index":null,"name":"none","isDeleted":false,"min":60.0}`, `{"index":null,"name":"none","isDeleted":false,"min":60.0}`},
		{"cleaning-tasks", `{"index":1E2,"name":"n","recurrence":2.50e1,"isDeleted":false}`, `{"index":100,"name":"n","recurrence":25,"isDeleted":false}`},
		{"cleaning-tasks", `{"index": 0.0, "name": "jsonb, text", "recurrence": 7, "isDeleted": false}`,
			`{"index":0,"name":"jsonb, text","recurrence":7,"isDeleted":false}`},
		{"restaurants",
			`{"name": "B", "address": "A", "settings": {"global": {"reportWeekday": 5.0, "exportSchedule": {"dayOfMonth": 15, "dayOfWeek": 3.0}, ` +
				`"reportRecipients": ["a", "b"]}, "temperatureRecords": {"recordsPerDay": 2.0}}, "closingDays": [], "subscription": {"remindersSent": 0.0}}`,
			`{"name":"B","address":"A","settings":{"global":{"reportWeekday":5,"exportSchedule":{"dayOfMonth":15,"dayOfWeek":3},` +
				`"reportRecipients":["a", "b"]},"temperatureRecords":{"recordsPerDay": 2.0}},"closingDays":[],"subscription":{"remindersSent":0}}`},
		{"cleaning-task-pictures", `{"timestamp":"1","asset":{"objectKey":"k","status":"uploaded","contentType":"image/png","byteLength":1.024e3,"sha256":"` + sha + `"}}`,
			`{"timestamp":"1","asset":{"objectKey":"k","status":"uploaded","contentType":"image/png","byteLength":1024,"sha256":"` + sha + `"}}`},
		{"temperature-records", `{"timestamp":"1","value":1.0,"unit":"C","shift":"AM","equipmentId":"f","index":1.0}`,
			`{"timestamp":"1","value":1.0,"unit":"C","shift":"AM","equipmentId":"f","index":1.0}`},
		{"areas", `{"name":"a","isDeleted":false,"index":2.0}`, `{"name":"a","isDeleted":false,"index":2.0}`},
	}
	for i, tc := range cases {
		id := fmt.Sprintf("rec-%d", i)
		_, err := sqlDB.ExecContext(ctx, `
			WITH c AS (
			  INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
			                              captured_at, received_at, payload_version, request_sha256)
			  VALUES ('r1', $1, $4, $2, $2, false, $3::json, 1, 1, 1, '\x00')
			  RETURNING restaurant_id, collection, record_id, sequence, mutation_id, deleted, data, captured_at, received_at, payload_version)
			INSERT INTO records (restaurant_id, collection, record_id, sequence, mutation_id, deleted, data,
			                     captured_at, received_at, payload_version)
			SELECT * FROM c`, tc.collection, id, tc.stored, i+1)
		require.NoError(t, err, tc.stored)
	}
	// A tombstone, and a compacted change (its data gone), of a collection
	// the migration rewrites.
	_, err = sqlDB.ExecContext(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256, superseded_by, superseded_at, compacted_at)
		VALUES ('r1', 'equipment', 2, 'gone', 'tomb', true, NULL, 1, 1, 1, '\x00', NULL, NULL, NULL),
		       ('r1', 'equipment', 1, 'gone', 'old', false, NULL, 1, 1, 1, '\x00', 2, 1, 1)`)
	require.NoError(t, err)

	_, err = p.Up(ctx)
	require.NoError(t, err)
	// Run once more: it converges (nothing left to rewrite, nothing
	// rewritten twice).
	_, err = sqlDB.ExecContext(ctx, readUp(t, "00020_integer_fields_plain.sql"))
	require.NoError(t, err)
	for i, tc := range cases {
		for _, q := range []string{
			`SELECT data::text FROM records WHERE record_id = $1`,
			`SELECT data::text FROM record_changes WHERE mutation_id = $1`,
		} {
			var got string
			require.NoError(t, sqlDB.QueryRowContext(ctx, q, fmt.Sprintf("rec-%d", i)).Scan(&got))
			require.Equal(t, tc.want, got, "%s %s", tc.collection, q)
			var same bool
			require.NoError(t, sqlDB.QueryRowContext(ctx, `SELECT $1::jsonb = $2::jsonb`, tc.stored, got).Scan(&same))
			require.True(t, same, "the same value: %s", tc.stored)
		}
	}
	var nulls int
	require.NoError(t, sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM record_changes WHERE record_id = 'gone' AND data IS NULL`).Scan(&nulls))
	require.Equal(t, 2, nulls)
}

// readUp is the Up section of a migration, as one script.
func readUp(t *testing.T, name string) string {
	t.Helper()
	b, err := migrations.FS.ReadFile(name)
	require.NoError(t, err)
	up, _, ok := strings.Cut(string(b), "-- +goose Down")
	require.True(t, ok, name)
	return up
}

// The online way of migration 00019 (sql/online/...) converts
// deliveries.temperature_records from jsonb to json while the service
// reads and writes deliveries: every row keeps its value in jsonb's text
// form, deliveries written during the conversion are converted too (the
// trigger), the column ends json and NOT NULL with no helper left behind,
// the migration then only records itself, a re-run changes nothing, and a
// delivery written afterwards keeps its number text.
func TestOnlineDeliveryTemperatures(t *testing.T) {
	t.Parallel()
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("psql is not installed: CI must run the online migration test")
		}
		t.Skip("skipped: psql is not installed (the PostgreSQL client; CI runs this test)")
	}
	ctx := context.Background()
	url := testdb.URL(t)
	execSQL(t, url, `ALTER TABLE deliveries ALTER COLUMN temperature_records TYPE jsonb USING temperature_records::jsonb`)
	a := newApp(t, withDatabaseURL(url))
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:write", "deliveries:read"))
	// A client of the spec retries a 503 (with backoff; here at once):
	// each pooled connection meets the swap once, as a prepared statement
	// whose result type changed. retrying answers the first other answer
	// and how many 503s came before it.
	retrying := func(f func() response) (response, int) {
		for n := 0; ; n++ {
			if r := f(); r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || n == 20 {
				return r, n
			}
		}
	}
	put := func(id, value string) (response, int) {
		body := strings.Replace(string(mustJSON(t, deliveryJSON(id, 1000))), `"value":3.5`, `"value":`+value, 1)
		return retrying(func() response {
			return a.putRaw(key, "/v1/ingest/restaurants/r1/deliveries/"+id, "application/json", []byte(body))
		})
	}
	get := func(path string) (response, int) { return retrying(func() response { return a.getAs(key, path) }) }
	for i := range 50 {
		r, _ := put(fmt.Sprintf("before-%02d", i), "1E+2")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}

	// Writes and reads go on while the script runs; anything but a 200
	// (after retried 503s) is a failure. Outcomes are collected here and
	// checked on the test goroutine.
	stop, failures := make(chan struct{}), make(chan string, 1000)
	written, retried := make(chan int, 1), make(chan int, 1)
	go func() {
		n, retries := 0, 0
		defer func() { written <- n; retried <- retries }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("during-%04d", n)
			r, k := put(id, "-0.0")
			if retries += k; r.Status != http.StatusOK {
				failures <- fmt.Sprintf("write %s: %d %s", id, r.Status, r.Body)
			}
			r, k = get(deliveriesPath("r1", window(0, 2000, 10)))
			if retries += k; r.Status != http.StatusOK {
				failures <- fmt.Sprintf("read: %d %s", r.Status, r.Body)
			}
			n++
		}
	}()
	out, err := exec.Command(psql, url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
		"-f", "../sql/online/00019_delivery_temperatures_as_received.sql").CombinedOutput()
	close(stop)
	during := <-written
	t.Logf("%d deliveries written during the conversion, %d answers of 503 retried", during, <-retried)
	close(failures)
	require.NoError(t, err, "%s", out)
	for f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Log(a.logs.String())
	}

	db, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer db.Close(ctx)
	var typ string
	var notNull bool
	require.NoError(t, db.QueryRow(ctx, `SELECT format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
		WHERE attrelid = 'deliveries'::regclass AND attname = 'temperature_records'`).Scan(&typ, &notNull))
	require.Equal(t, "json", typ)
	require.True(t, notNull)
	var leftovers int
	require.NoError(t, db.QueryRow(ctx, `SELECT
		  (SELECT count(*) FROM pg_attribute WHERE attrelid = 'deliveries'::regclass AND attname = 'temperature_records_json' AND NOT attisdropped)
		+ (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'deliveries'::regclass AND NOT tgisinternal)
		+ (SELECT count(*) FROM pg_constraint WHERE conrelid = 'deliveries'::regclass AND conname LIKE '%json%')
		+ (SELECT count(*) FROM pg_proc WHERE proname LIKE 'foodsafe_temperatures%')`).Scan(&leftovers))
	require.Zero(t, leftovers, "helpers left behind")
	var rows, converted int
	// Each row holds its value: as jsonb's text when it was written
	// before the swap, or (written by the service after it) as the text
	// the service writes.
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (
		  WHERE temperature_records::jsonb = ('[{"product": "Chicken breast", "lotNumber": "L-2211", "unit": "°C", "value": ' ||
		        CASE WHEN id LIKE 'before-%' THEN '1E+2' ELSE '-0.0' END ||
		        '}, {"product": "Yoghurt", "lotNumber": "Y-9", "unit": "celsius", "value": -1}]')::jsonb
		    AND (temperature_records::text = temperature_records::jsonb::text OR (id LIKE 'during-%' AND temperature_records::text =
		         '[{"product":"Chicken breast","lotNumber":"L-2211","unit":"°C","value":-0.0},{"product":"Yoghurt","lotNumber":"Y-9","unit":"celsius","value":-1}]')))
		FROM deliveries`).Scan(&rows, &converted))
	require.Equal(t, 50+during, rows)
	require.Equal(t, rows, converted, "every row holds its value, as jsonb's text or the service's")

	// The migration finds the column converted; the script again changes
	// nothing.
	_, err = db.Exec(ctx, readUp(t, "00019_delivery_temperatures_as_received.sql"))
	require.NoError(t, err)
	out, err = exec.Command(psql, url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
		"-f", "../sql/online/00019_delivery_temperatures_as_received.sql").CombinedOutput()
	require.NoError(t, err, "%s", out)
	r, _ := put("after", "1E+2")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r, _ = get("/v1/restaurants/r1/deliveries/after")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, "1E+2", firstTemperature(t, r.Body))
	r, _ = get("/v1/restaurants/r1/deliveries/before-00")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, "100", firstTemperature(t, r.Body))
}

// Migration 00042 gives each existing stream the size of its largest
// record version (octet_length of its data as text, as the walk statements
// count it), superseded versions included (a pinned walk still returns
// them), compacted ones and tombstones not (no data); 0 for a stream with
// no data (deliveries, only tombstones).
func TestMigrationStreamWidestRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlDB, p := migratedTo(t, 40)
	_, err := sqlDB.ExecContext(ctx, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', now())`)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256, superseded_by, superseded_at, compacted_at)
		VALUES ('r1', 'areas', 1, 'a1', 'm1', false, '{"name":"a long name, superseded"}', 1, 1, 1, '\x00', 3, 1, NULL),
		       ('r1', 'areas', 2, 'a2', 'm2', false, '{"name":"b"}', 1, 1, 1, '\x00', NULL, NULL, NULL),
		       ('r1', 'areas', 3, 'a1', 'm3', false, '{"name":"a"}', 1, 1, 1, '\x00', NULL, NULL, NULL),
		       ('r1', 'users', 1, 'u1', 'm4', false, NULL, 1, 1, 1, '\x00', 2, 1, 1),
		       ('r1', 'users', 2, 'u1', 'm5', true, NULL, 1, 1, 1, '\x00', NULL, NULL, NULL)`)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence)
		VALUES ('r1', 'areas', 3), ('r1', 'users', 2), ('r1', 'deliveries', 0)`)
	require.NoError(t, err)

	_, err = p.Up(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"areas": int64(len(`{"name":"a long name, superseded"}`)), "users": 0, "deliveries": 0}, streamSizes(t, sqlDB))
}

// streamSizes is every stream's max_record_bytes, by collection (the
// tests' streams are of one restaurant).
func streamSizes(t *testing.T, sqlDB *sql.DB) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	rows, err := sqlDB.QueryContext(context.Background(), `SELECT collection, max_record_bytes FROM collection_streams`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var c string
		var n int64
		require.NoError(t, rows.Scan(&c, &n))
		got[c] = n
	}
	require.NoError(t, rows.Err())
	return got
}

// Migration 00046 measures the streams whose largest record is unknown
// (NULL), as 00042 measured every stream, 0 for one with no version, and
// leaves a known size as it is. A write into an unknown stream in flight
// while it runs (the stream's row held, as ingest holds it from
// StreamNextSequence to its commit, with a larger version added) is waited
// for and counted: measured on a snapshot from before that commit, the
// stream would keep a size below its largest record, and its walk pages
// would skip the byte sum they need.
func TestMigrationMeasuresUnknownStreamSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlDB, p := migratedTo(t, 45)
	_, err := sqlDB.ExecContext(ctx, `INSERT INTO restaurants (id, enabled_at) VALUES ('r1', now())`)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256)
		VALUES ('r1', 'areas', 1, 'a1', 'm1', false, '{"name":"small"}', 1, 1, 1, '\x00'),
		       ('r1', 'users', 1, 'u1', 'm2', false, '{"name":"a user"}', 1, 1, 1, '\x00')`)
	require.NoError(t, err)
	_, err = sqlDB.ExecContext(ctx, `INSERT INTO collection_streams (restaurant_id, collection, last_sequence, max_record_bytes)
		VALUES ('r1', 'areas', 1, NULL), ('r1', 'users', 1, 7), ('r1', 'products', 0, NULL)`)
	require.NoError(t, err)

	large := `{"name":"` + strings.Repeat("x", 5000) + `"}`
	tx, err := sqlDB.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // committed below; a rollback after is a no-op
	_, err = tx.ExecContext(ctx, `UPDATE collection_streams SET last_sequence = last_sequence + 1 WHERE restaurant_id = 'r1' AND collection = 'areas'`)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `
		INSERT INTO record_changes (restaurant_id, collection, sequence, record_id, mutation_id, deleted, data,
		                            captured_at, received_at, payload_version, request_sha256)
		VALUES ('r1', 'areas', 2, 'a2', 'm3', false, $1, 1, 1, 1, '\x00')`, large)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := p.UpTo(ctx, 46)
		done <- err
	}()
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute) // a guard against hanging, not a measure
	defer cancel()
	for waiting := 0; waiting == 0; {
		require.NoError(t, sqlDB.QueryRowContext(waitCtx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%max_record_bytes IS NULL%'`).Scan(&waiting),
			"waiting for the migration to wait for the stream row")
	}
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)

	require.Equal(t, map[string]int64{"areas": int64(len(large)), "users": 7, "products": 0}, streamSizes(t, sqlDB))
}

// Migration 00045 keeps the grants of the tokens open when it runs: each
// token's (restaurant, scope) rows become its scope sets, restaurants of
// one set together, and going down gives back the same rows.
func TestMigrationSessionGrantSets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sqlDB, p := migratedTo(t, 44)
	_, err := sqlDB.ExecContext(ctx, `
		INSERT INTO api_keys (id, public_id, secret_sha256, label) OVERRIDING SYSTEM VALUE VALUES (1, 'migrationkey1', sha256('k'), 'k');
		INSERT INTO mobile_sessions (id, public_id, token_sha256, key_id, expires_at) OVERRIDING SYSTEM VALUE
		SELECT g, 'migrationsess' || g, sha256(g::text::bytea), 1, now() + interval '1 hour' FROM generate_series(1, 3) g;
		INSERT INTO session_grants (session_id, restaurant_id, scope)
		VALUES (1, 'r2', 'areas:write'), (1, 'r2', 'areas:read'), (1, 'r1', 'areas:read'), (1, 'r1', 'areas:write'),
		       (1, 'r3', 'areas:read'), (2, 'r1', 'users:read')`)
	require.NoError(t, err)
	grants := func(table string) []string {
		t.Helper()
		q := `SELECT session_id || ' ' || restaurant_id || ' ' || scope FROM session_grants ORDER BY 1`
		if table == "session_grant_sets" {
			q = `SELECT session_id || ' ' || array_to_string(scopes, ',') || ' ' || array_to_string(restaurant_ids, ',')
			     FROM session_grant_sets ORDER BY 1`
		}
		rows, err := sqlDB.QueryContext(ctx, q)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, rows.Err())
		return out
	}
	before := grants("session_grants")

	_, err = p.UpTo(ctx, 45)
	require.NoError(t, err)
	require.Equal(t, []string{"1 areas:read r3", "1 areas:read,areas:write r1,r2", "2 users:read r1"}, grants("session_grant_sets"))

	// After the upgrade the new release writes only session_grant_sets:
	// token 3 is opened that way, and session_grants is emptied to stand
	// for the tokens opened since (their rows were never written), so
	// every row going down finds must come from session_grant_sets.
	_, err = sqlDB.ExecContext(ctx, `
		DELETE FROM session_grants;
		INSERT INTO session_grant_sets (session_id, scopes, restaurant_ids)
		VALUES (3, '{deliveries:read,users:read}', '{r4,r1}'), (3, '{areas:read}', '{r5}')`)
	require.NoError(t, err)
	require.Empty(t, grants("session_grants"))

	_, err = p.DownTo(ctx, 44)
	require.NoError(t, err)
	want := append(before, "3 r1 deliveries:read", "3 r1 users:read", "3 r4 deliveries:read", "3 r4 users:read",
		"3 r5 areas:read")
	require.ElementsMatch(t, want, grants("session_grants"))
}
