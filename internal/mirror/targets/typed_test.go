package targets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

func newSQLiteTarget(t *testing.T) *Target {
	t.Helper()
	tg, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}

func temp(id string, seq int64, value string, actions ...string) Record {
	acts, _ := json.Marshal(actions)
	if actions == nil {
		acts = []byte("null")
	}
	return Record{ID: id, Sequence: seq, MutationID: "m", PayloadVersion: 1, CapturedAt: 1795766700000 + seq, ReceivedAt: 1795766800000 + seq,
		Data: []byte(`{"timestamp":"1795766700123","value":` + value + `,"unit":"°C","shift":"MORNING","equipmentId":"fridge-1","correctiveActions":` + string(acts) + `}`)}
}

func applyTemps(t *testing.T, tg *Target, mode TombstoneMode, recs ...Record) {
	t.Helper()
	ctx := context.Background()
	if err := tg.EnsureCollection(ctx, "temperature-records"); err != nil {
		t.Fatal(err)
	}
	if err := tg.Update(ctx, func(p *Page) error {
		return p.ApplyRecords(ctx, "r1", "temperature-records", recs, mode, 0, false)
	}); err != nil {
		t.Fatal(err)
	}
}

func queryStrings(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scanStrings(rows)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The typed rows follow every page in its transaction: a new record and
// its array elements, an update replacing them, an older state leaving
// them, a tombstone removing them in both modes.
func TestTypedRowsFollowThePages(t *testing.T) {
	for _, mode := range []TombstoneMode{TombstoneMark, TombstoneDelete} {
		tg := newSQLiteTarget(t)
		rows := func() []string {
			return queryStrings(t, tg.db, `SELECT id || ' ' || sequence || ' ' || value || ' ' || timestamp || ' ' || timestamp_ms || ' ' || captured_at
				FROM typed_temperature_records ORDER BY id`)
		}
		actions := func() []string {
			return queryStrings(t, tg.db, `SELECT parent_id || ' ' || ordinal || ' ' || value FROM typed_temperature_records_corrective_actions ORDER BY parent_id, ordinal`)
		}
		applyTemps(t, tg, mode, temp("a", 1, "4.5", "closed the door", "re-measured"), temp("b", 2, "3"))
		if got, want := rows(), []string{
			"a 1 4.5 2026-11-27T08:05:00.123Z 1795766700123 2026-11-27T08:05:00.001Z",
			"b 2 3.0 2026-11-27T08:05:00.123Z 1795766700123 2026-11-27T08:05:00.002Z",
		}; !reflect.DeepEqual(got, want) {
			t.Fatalf("after the first page\n got %v\nwant %v", got, want)
		}
		if got, want := actions(), []string{"a 1 closed the door", "a 2 re-measured"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("elements %v, want %v", got, want)
		}
		applyTemps(t, tg, mode, temp("a", 5, "1E+1", "called the technician"), temp("b", 1, "99", "older: ignored"))
		if got := rows(); !strings.HasPrefix(got[0], "a 5 10.0 ") || !strings.HasPrefix(got[1], "b 2 3.0 ") {
			t.Fatalf("after an update and an older state: %v", got)
		}
		if got, want := actions(), []string{"a 1 called the technician"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("elements after the update %v, want %v", got, want)
		}
		applyTemps(t, tg, mode, Record{ID: "a", Sequence: 6, Deleted: true, MutationID: "m", PayloadVersion: 1}, Record{ID: "b", Sequence: 1, Deleted: true})
		if got := rows(); len(got) != 1 || !strings.HasPrefix(got[0], "b 2 ") {
			t.Errorf("mode %d: after a tombstone and an older one: %v", mode, got)
		}
		if got := actions(); len(got) != 0 {
			t.Errorf("mode %d: a tombstone's elements stay: %v", mode, got)
		}
		raw := queryStrings(t, tg.db, `SELECT id FROM temperature_records ORDER BY id`)
		if want := map[TombstoneMode][]string{TombstoneMark: {"a", "b"}, TombstoneDelete: {"b"}}[mode]; !reflect.DeepEqual(raw, want) {
			t.Errorf("mode %d: raw rows %v, want %v", mode, raw, want)
		}
	}
}

// A rebuild that drops what its walk did not bring drops their typed rows
// too.
func TestTypedRowsOfDroppedRecords(t *testing.T) {
	tg := newSQLiteTarget(t)
	applyTemps(t, tg, TombstoneMark, temp("a", 1, "4", "x"), temp("b", 2, "5"))
	ctx := context.Background()
	err := tg.Update(ctx, func(p *Page) error {
		if err := p.ApplyRecords(ctx, "r1", "temperature-records", []Record{temp("b", 2, "5")}, TombstoneMark, 1, true); err != nil {
			return err
		}
		_, err := p.DropStale(ctx, "r1", "temperature-records", 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, tg.db, `SELECT id FROM typed_temperature_records UNION ALL SELECT parent_id FROM typed_temperature_records_corrective_actions`); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("typed rows after the rebuild: %v", got)
	}
}

// The deliveries' typed rows: one per delivery, one per measurement.
func TestTypedDeliveries(t *testing.T) {
	tg := newSQLiteTarget(t)
	ctx := context.Background()
	d := Delivery{ID: "d1", OccurredAt: 1795766700000, SupplierID: "s1", SupplierName: "Fresh Farm", ImageCount: 0, Data: []byte(`{"id":"d1","restaurantId":"r1",
		"occurredAt":"1795766700000","isCompliant":false,"supplier":{"id":"s1","name":"Fresh Farm"},
		"temperatureRecords":[{"product":"Salmon","lotNumber":"L1","unit":"°C","value":5.5},{"product":"Cod","lotNumber":"L2","unit":"°C","value":2}],
		"nonComplianceReasons":["Too warm"],"correctiveActions":[],"commentary":null,"imageCount":0}`)}
	for range 2 { // the second time the delivery is known: nothing changes
		if err := tg.Update(ctx, func(p *Page) error { _, err := p.ApplyDeliveries(ctx, "r1", []Delivery{d}); return err }); err != nil {
			t.Fatal(err)
		}
	}
	got := queryStrings(t, tg.db, `SELECT id || ' ' || occurred_at || ' ' || is_compliant || ' ' || supplier_id || ' ' || supplier_name || ' ' || coalesce(commentary, 'null') || ' ' || image_count FROM typed_deliveries`)
	if want := []string{"d1 2026-11-27T08:05:00.000Z 0 s1 Fresh Farm null 0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("typed_deliveries %v, want %v", got, want)
	}
	got = queryStrings(t, tg.db, `SELECT ordinal || ' ' || product || ' ' || lot_number || ' ' || value FROM typed_deliveries_temperature_records ORDER BY ordinal`)
	if want := []string{"1 Salmon L1 5.5", "2 Cod L2 2.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("measurements %v, want %v", got, want)
	}
	if got := queryStrings(t, tg.db, `SELECT value FROM typed_deliveries_non_compliance_reasons UNION ALL SELECT value FROM typed_deliveries_corrective_actions`); !reflect.DeepEqual(got, []string{"Too warm"}) {
		t.Errorf("reasons and actions %v", got)
	}
}

// version1 is the schema of the release before typed relations, verbatim
// (what its migrate and ensureCollectionTable created in SQLite).
var version1 = []string{
	`CREATE TABLE mirror_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE sync_state (restaurant_id TEXT NOT NULL, stream TEXT NOT NULL, changes_cursor TEXT, walk_cursor TEXT, walk_kind TEXT,
		walk_gen BIGINT NOT NULL DEFAULT 0, window_from BIGINT, window_to BIGINT, pass_to BIGINT, covered_to BIGINT, high_water BIGINT,
		pages BIGINT NOT NULL DEFAULT 0, applied BIGINT NOT NULL DEFAULT 0, last_synced_at BIGINT, last_error TEXT, PRIMARY KEY (restaurant_id, stream))`,
	`CREATE TABLE deliveries (restaurant_id TEXT NOT NULL, id TEXT NOT NULL, occurred_at BIGINT NOT NULL, is_compliant BOOLEAN NOT NULL,
		supplier_id TEXT NOT NULL, supplier_name TEXT NOT NULL, image_count BIGINT NOT NULL, data TEXT NOT NULL,
		images_synced BOOLEAN NOT NULL DEFAULT 0, PRIMARY KEY (restaurant_id, id))`,
	`CREATE INDEX deliveries_occurred_idx ON deliveries (restaurant_id, occurred_at)`,
	`CREATE TABLE stream_heads (restaurant_id TEXT NOT NULL, stream TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY (restaurant_id, stream))`,
	`CREATE TABLE files (sha256 TEXT PRIMARY KEY, content_type TEXT NOT NULL, byte_length BIGINT NOT NULL, path TEXT NOT NULL, downloaded_at BIGINT NOT NULL)`,
	`CREATE TABLE file_links (restaurant_id TEXT NOT NULL, source TEXT NOT NULL, parent TEXT NOT NULL, item_id TEXT NOT NULL, sha256 TEXT NOT NULL,
		content_type TEXT NOT NULL, PRIMARY KEY (restaurant_id, source, parent, item_id))`,
	`INSERT INTO mirror_meta VALUES ('schema_version', '1')`,
	`CREATE TABLE "temperature_records" (restaurant_id TEXT NOT NULL, id TEXT NOT NULL, sequence TEXT NOT NULL, deleted BOOLEAN NOT NULL, data TEXT,
		captured_at BIGINT NOT NULL, received_at BIGINT NOT NULL, mutation_id TEXT NOT NULL, source_version TEXT, payload_version INTEGER NOT NULL,
		asset_sha256 TEXT, walk_gen BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (restaurant_id, id))`,
	`CREATE INDEX "temperature_records_asset_idx" ON "temperature_records" (asset_sha256)`,
}

func version1Target(t *testing.T, sequences ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range version1 {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(s, err)
		}
	}
	for i, seq := range sequences {
		id := string(rune('a' + i))
		if _, err := db.Exec(`INSERT INTO temperature_records VALUES ('r1', ?, ?, ?, ?, 1, 2, 'm', NULL, 1, NULL, 0)`,
			id, seq, i == 1, string(temp(id, 1, "3").Data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO stream_heads VALUES ('r1', 'temperature-records', '180'), ('r1', 'deliveries', '7')`); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path
}

// A target made by the previous release is upgraded in place when it is
// opened: sequences and heads become numbers (ORDER BY sequence is the
// stream's order), the typed relations are built from the rows it holds
// (live ones only), and nothing else changes.
func TestUpgradeFromVersion1(t *testing.T) {
	ctx := context.Background()
	spec := version1Target(t, "99", "98", "180", "5")
	tg, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if v, err := tg.schema().version(ctx); err != nil || v != schemaVersion {
		t.Fatalf("version %d, %v", v, err)
	}
	if got := queryStrings(t, tg.db, `SELECT sequence || ' ' || typeof(sequence) FROM temperature_records ORDER BY sequence DESC`); !reflect.DeepEqual(got,
		[]string{"180 integer", "99 integer", "98 integer", "5 integer"}) {
		t.Errorf("sequences after the upgrade %v", got)
	}
	if got := queryStrings(t, tg.db, `SELECT stream || ' ' || head || ' ' || typeof(head) FROM stream_heads ORDER BY head`); !reflect.DeepEqual(got,
		[]string{"deliveries 7 integer", "temperature-records 180 integer"}) {
		t.Errorf("heads after the upgrade %v", got)
	}
	// b (sequence 98) is a tombstone: no typed row.
	if got := queryStrings(t, tg.db, `SELECT id || ' ' || sequence FROM typed_temperature_records ORDER BY sequence`); !reflect.DeepEqual(got, []string{"d 5", "a 99", "c 180"}) {
		t.Errorf("typed rows after the upgrade %v", got)
	}
	if got := queryStrings(t, tg.db, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'temperature_records'`); !slices.Contains(got, "temperature_records_asset_idx") {
		t.Errorf("indexes after the upgrade %v", got)
	}
	// The upgraded target takes new pages.
	applyTemps(t, tg, TombstoneMark, temp("a", 200, "2"), temp("c", 100, "1"))
	if got := queryStrings(t, tg.db, `SELECT id || ' ' || sequence FROM typed_temperature_records ORDER BY sequence`); !reflect.DeepEqual(got, []string{"d 5", "c 180", "a 200"}) {
		t.Errorf("typed rows after a page %v", got)
	}
}

// A version-1 target holding a sequence beyond 64 bits is left as it
// was, and the error says why.
func TestUpgradeRefusesWhatItCannotKeep(t *testing.T) {
	ctx := context.Background()
	spec := version1Target(t, "12", "99999999999999999999")
	if _, err := Open(ctx, spec); err == nil || !strings.Contains(err.Error(), "not a number of 64 bits") {
		t.Fatalf("opened: %v", err)
	}
	db, err := sql.Open("sqlite", "file:"+strings.TrimPrefix(spec, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := queryStrings(t, db, `SELECT value FROM mirror_meta WHERE name = 'schema_version' UNION ALL SELECT typeof(sequence) FROM temperature_records`); !reflect.DeepEqual(got, []string{"1", "text", "text"}) {
		t.Errorf("the target changed: %v", got)
	}
}

// Typed relations made by another release's definition are rebuilt when
// the target is opened, and those this release does not define dropped;
// while another run holds the target, the open is refused instead.
func TestTypedRelationsFollowTheRelease(t *testing.T) {
	ctx := context.Background()
	tg := newSQLiteTarget(t)
	applyTemps(t, tg, TombstoneMark, temp("a", 1, "4", "x"))
	spec := tg.Where
	exec := func(q string) {
		t.Helper()
		if _, err := tg.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE typed_relations SET definition = 'another release' WHERE name = 'typed_temperature_records'`)
	exec(`DELETE FROM typed_temperature_records`)
	exec(`CREATE TABLE typed_gone (x TEXT)`)
	exec(`INSERT INTO typed_relations VALUES ('typed_gone', 'gone', 'x')`)

	if err := tg.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, spec); !errors.Is(err, errUpgradeBusy) {
		t.Fatalf("opened beside a run holding the target: %v", err)
	}
	tg.unlock()
	again, err := Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := queryStrings(t, again.db, `SELECT id FROM typed_temperature_records UNION ALL SELECT parent_id FROM typed_temperature_records_corrective_actions`); !reflect.DeepEqual(got, []string{"a", "a"}) {
		t.Errorf("rebuilt rows %v", got)
	}
	if got := queryStrings(t, again.db, `SELECT name FROM sqlite_master WHERE name = 'typed_gone' UNION ALL SELECT name FROM typed_relations WHERE name = 'typed_gone'`); len(got) != 0 {
		t.Errorf("a relation no longer defined stays: %v", got)
	}
	if err := again.Lock(ctx); err != nil {
		t.Errorf("the upgrade left the target locked: %v", err)
	}
}

// A target of schema version 2 holds deliveries mirrored before the API
// sent receivedAt. Opening it upgrades it to version 3: the deliveries
// stream of a restaurant holding one is marked to be read again from its
// first delivery, and a delivery coming again with receivedAt completes
// the one held (its typed rows replaced, not doubled), once: a delivery
// holding receivedAt is immutable again. In SQLite and PostgreSQL.
func TestUpgradeCompletesDeliveriesWithoutReceivedAt(t *testing.T) {
	for name, spec := range map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "v2.db"), "postgres": testdb.EmptyURL(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			delivery := func(received string) Delivery {
				extra := ""
				if received != "" {
					extra = `,"receivedAt":"` + received + `"`
				}
				return Delivery{ID: "d1", OccurredAt: 1795766700000, SupplierID: "s1", SupplierName: "Fresh Farm", Data: []byte(`{"id":"d1","restaurantId":"r1",
					"occurredAt":"1795766700000","isCompliant":true,"supplier":{"id":"s1","name":"Fresh Farm"},
					"temperatureRecords":[{"product":"Salmon","lotNumber":"L1","unit":"°C","value":5.5},{"product":"Cod","lotNumber":"L2","unit":"°C","value":2}],
					"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":0` + extra + `}`)}
			}
			apply := func(tg *Target, d Delivery) int64 {
				t.Helper()
				var n int64
				if err := tg.Update(ctx, func(p *Page) (err error) { n, err = p.ApplyDeliveries(ctx, "r1", []Delivery{d}); return err }); err != nil {
					t.Fatal(err)
				}
				return n
			}
			tg, err := Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			apply(tg, delivery(""))
			for _, s := range []string{
				`INSERT INTO sync_state (restaurant_id, stream, changes_cursor) VALUES ('r1', 'deliveries', 'kept'), ('r2', 'deliveries', 'kept')`,
				`UPDATE typed_relations SET definition = 'earlier' WHERE source = 'deliveries'`,
				`UPDATE mirror_meta SET value = '2' WHERE name = 'schema_version'`,
			} {
				if _, err := tg.db.Exec(s); err != nil {
					t.Fatal(s, err)
				}
			}
			tg.Close()

			tg, err = Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			if v, err := tg.schema().version(ctx); err != nil || v != 3 {
				t.Fatalf("version %d, %v", v, err)
			}
			got := queryStrings(t, tg.db, `SELECT restaurant_id || ' ' || coalesce(changes_cursor, 'none') || ' ' || coalesce(last_error, 'ok') FROM sync_state ORDER BY restaurant_id`)
			if want := []string{"r1 none reading every delivery again for its receivedAt (foodsafe-sync upgrade)", "r2 kept ok"}; !reflect.DeepEqual(got, want) {
				t.Errorf("streams after the upgrade %v, want %v (only r1 holds a delivery without receivedAt)", got, want)
			}
			if got := queryStrings(t, tg.db, `SELECT coalesce(CAST(received_at_ms AS TEXT), 'null') FROM typed_deliveries`); !reflect.DeepEqual(got, []string{"null"}) {
				t.Errorf("received_at_ms before the delivery comes again %v", got)
			}
			if n := apply(tg, delivery("1795770000000")); n != 1 {
				t.Errorf("completing the delivery applied %d", n)
			}
			if n := apply(tg, delivery("1795779999999")); n != 0 {
				t.Errorf("a complete delivery was written over (%d)", n)
			}
			if got := queryStrings(t, tg.db, `SELECT CAST(received_at_ms AS TEXT) FROM typed_deliveries`); !reflect.DeepEqual(got, []string{"1795770000000"}) {
				t.Errorf("received_at_ms %v", got)
			}
			if got := queryStrings(t, tg.db, `SELECT CAST(count(*) AS TEXT) FROM typed_deliveries_temperature_records`); !reflect.DeepEqual(got, []string{"2"}) {
				t.Errorf("measurements after the completion %v", got)
			}
		})
	}
}
