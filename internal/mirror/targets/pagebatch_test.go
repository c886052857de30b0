package targets

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A page's records of many restaurants, written in the same statements,
// do to each restaurant's rows what a page of that restaurant alone
// would, in both dialects: the newer sequence wins per restaurant (an
// id of one restaurant never touches the same id of another), a
// tombstone in delete mode removes the row and its typed rows only when
// it is newer (always in a rebuild), a tombstone of a record never seen
// deletes nothing, and the deliveries' new ones are counted by
// restaurant, a delivery named twice once.
func TestApplyCollectionAcrossRestaurants(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []string{"sqlite", "postgres"} {
		t.Run(spec, func(t *testing.T) {
			tg := testTarget(t, spec)
			if err := tg.EnsureCollection(ctx, "temperature-records"); err != nil {
				t.Fatal(err)
			}
			apply := func(force bool, streams ...StreamRecords) {
				t.Helper()
				if err := tg.Update(ctx, func(p *Page) error {
					return p.ApplyCollection(ctx, "temperature-records", streams, TombstoneDelete, force)
				}); err != nil {
					t.Fatal(err)
				}
			}
			tomb := func(id string, seq int64) Record {
				return Record{ID: id, Sequence: seq, Deleted: true, MutationID: "m", PayloadVersion: 1}
			}
			rows := func() []string {
				return queryStrings(t, tg.db, `SELECT t.restaurant_id || ' ' || t.id || ' ' || t.sequence || ' ' ||
					(SELECT count(*) FROM typed_temperature_records_corrective_actions c WHERE c.restaurant_id = t.restaurant_id AND c.parent_id = t.id)
					FROM typed_temperature_records t ORDER BY 1`)
			}
			apply(false,
				StreamRecords{Restaurant: "r1", Records: []Record{temp("a", 1, "1", "x"), temp("b", 2, "2", "x", "y")}},
				StreamRecords{Restaurant: "r2", Records: []Record{temp("a", 5, "3"), temp("c", 6, "4", "z")}})
			if got, want := rows(), []string{"r1 a 1 1", "r1 b 2 2", "r2 a 5 0", "r2 c 6 1"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("first page\n got %v\nwant %v", got, want)
			}
			// r1's a: a newer tombstone; r2's a: an older one, left; r2's
			// c: updated; r1's z: never seen; r1's b: twice, the newer wins.
			apply(false,
				StreamRecords{Restaurant: "r1", Records: []Record{tomb("a", 3), tomb("z", 9), temp("b", 4, "2"), temp("b", 3, "2", "old")}},
				StreamRecords{Restaurant: "r2", Records: []Record{tomb("a", 4), temp("c", 7, "4", "z", "w")}})
			if got, want := rows(), []string{"r1 b 4 0", "r2 a 5 0", "r2 c 7 2"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("second page\n got %v\nwant %v", got, want)
			}
			// A rebuild's tombstone removes the row whatever its sequence.
			apply(true, StreamRecords{Restaurant: "r2", Records: []Record{tomb("a", 1)}})
			if got, want := rows(), []string{"r1 b 4 0", "r2 c 7 2"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("rebuild\n got %v\nwant %v", got, want)
			}
			if got := queryStrings(t, tg.db, `SELECT restaurant_id || ' ' || id FROM "temperature_records" ORDER BY 1`); !reflect.DeepEqual(got, []string{"r1 b", "r2 c"}) {
				t.Fatalf("mirrored rows %v", got)
			}

			d := func(id string) Delivery {
				return Delivery{ID: id, OccurredAt: 1, IsCompliant: true, SupplierID: "s", SupplierName: "S", Data: []byte(`{"id":"` + id + `"}`)}
			}
			var counts map[string]int64
			if err := tg.Update(ctx, func(p *Page) error {
				var err error
				counts, err = p.ApplyDeliveriesOf(ctx, []StreamDeliveries{
					{Restaurant: "r1", Deliveries: []Delivery{d("d1"), d("d2"), d("d1")}},
					{Restaurant: "r2", Deliveries: []Delivery{d("d1")}},
				})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if want := map[string]int64{"r1": 2, "r2": 1}; !reflect.DeepEqual(counts, want) {
				t.Fatalf("new deliveries %v, want %v", counts, want)
			}
			if got := queryStrings(t, tg.db, `SELECT restaurant_id || ' ' || id FROM deliveries ORDER BY 1`); !reflect.DeepEqual(got, []string{"r1 d1", "r1 d2", "r2 d1"}) {
				t.Fatalf("deliveries %v", got)
			}
		})
	}
}

// A page of more tombstones than one SQLite statement binds (three
// parameters each) is deleted a chunk at a time, every tombstone of every
// chunk applied by its own sequence: all of them newer delete their rows,
// in both dialects, and the first of each chunk, older than its row,
// leaves it. Unchunked, SQLite refuses the statement (too many SQL
// variables).
func TestApplyCollectionDeletesMoreTombstonesThanAStatementBinds(t *testing.T) {
	ctx := context.Background()
	n := 2*tombstoneChunk + 1 // three statements in SQLite, the last of one tombstone
	restaurant := func(i int) string { return fmt.Sprintf("r%d", 3*i/n) }
	id := func(i int) string { return fmt.Sprintf("t%05d", i) }
	for _, spec := range []string{"sqlite", "postgres"} {
		t.Run(spec, func(t *testing.T) {
			tg := testTarget(t, spec)
			if err := tg.EnsureCollection(ctx, "temperature-records"); err != nil {
				t.Fatal(err)
			}
			page := func(rec func(i int) Record) []StreamRecords {
				var streams []StreamRecords
				for i := range n {
					if r := restaurant(i); len(streams) == 0 || streams[len(streams)-1].Restaurant != r {
						streams = append(streams, StreamRecords{Restaurant: r})
					}
					streams[len(streams)-1].Records = append(streams[len(streams)-1].Records, rec(i))
				}
				return streams
			}
			apply := func(streams []StreamRecords) {
				t.Helper()
				if err := tg.Update(ctx, func(p *Page) error {
					return p.ApplyCollection(ctx, "temperature-records", streams, TombstoneDelete, false)
				}); err != nil {
					t.Fatal(err)
				}
			}
			apply(page(func(i int) Record { return temp(id(i), 2, "3", "x") }))
			var kept []string
			apply(page(func(i int) Record {
				seq := int64(3)
				if i%tombstoneChunk == 0 {
					seq = 1
					kept = append(kept, restaurant(i)+" "+id(i))
				}
				return Record{ID: id(i), Sequence: seq, Deleted: true, MutationID: "m", PayloadVersion: 1}
			}))
			if len(kept) != 3 {
				t.Fatalf("kept %v: the page does not span three statements", kept)
			}
			for _, q := range []string{
				`SELECT restaurant_id || ' ' || id FROM "temperature_records" ORDER BY 1`,
				`SELECT restaurant_id || ' ' || id FROM typed_temperature_records ORDER BY 1`,
				`SELECT restaurant_id || ' ' || parent_id FROM typed_temperature_records_corrective_actions ORDER BY 1`,
			} {
				if got := queryStrings(t, tg.db, q); !reflect.DeepEqual(got, kept) {
					t.Fatalf("%s: %d rows left (%.5v), want %v", q, len(got), got, kept)
				}
			}
		})
	}
}

// A page naming one delivery twice, with different data, stores it once,
// as first named, and its typed rows are built from that same
// occurrence: they say what the stored row's data says, in both
// dialects.
func TestApplyDeliveriesOfNamedTwiceTypesTheStoredOccurrence(t *testing.T) {
	ctx := context.Background()
	delivery := func(supplier, product string) Delivery {
		return Delivery{ID: "d1", OccurredAt: 1795766700000, SupplierID: "s1", SupplierName: supplier, Data: []byte(`{"id":"d1","restaurantId":"r1",
			"occurredAt":"1795766700000","isCompliant":true,"supplier":{"id":"s1","name":"` + supplier + `"},
			"temperatureRecords":[{"product":"` + product + `","lotNumber":"L1","unit":"°C","value":2}],
			"nonComplianceReasons":[],"correctiveActions":[],"commentary":null,"imageCount":0}`)}
	}
	for _, spec := range []string{"sqlite", "postgres"} {
		t.Run(spec, func(t *testing.T) {
			tg := testTarget(t, spec)
			var counts map[string]int64
			if err := tg.Update(ctx, func(p *Page) error {
				var err error
				counts, err = p.ApplyDeliveriesOf(ctx, []StreamDeliveries{
					{Restaurant: "r1", Deliveries: []Delivery{delivery("First Farm", "Salmon"), delivery("Second Farm", "Cod")}},
				})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if want := map[string]int64{"r1": 1}; !reflect.DeepEqual(counts, want) {
				t.Fatalf("new deliveries %v, want %v", counts, want)
			}
			stored := append(queryStrings(t, tg.db, `SELECT data FROM deliveries`), queryStrings(t, tg.db, `SELECT supplier_name FROM deliveries`)...)
			if len(stored) != 2 {
				t.Fatalf("deliveries %v", stored)
			}
			data, column := stored[0], stored[1]
			var doc struct {
				Supplier           struct{ Name string }
				TemperatureRecords []struct{ Product string }
			}
			if err := json.Unmarshal([]byte(data), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.TemperatureRecords) != 1 || doc.Supplier.Name != column {
				t.Fatalf("stored row %q", stored)
			}
			if column != "First Farm" { // ON CONFLICT keeps the first row of the statement
				t.Fatalf("stored %q, want the first occurrence", column)
			}
			if got := queryStrings(t, tg.db, `SELECT supplier_name FROM typed_deliveries`); !reflect.DeepEqual(got, []string{doc.Supplier.Name}) {
				t.Errorf("typed_deliveries %v, the stored row says %q", got, doc.Supplier.Name)
			}
			if got := queryStrings(t, tg.db, `SELECT product FROM typed_deliveries_temperature_records`); !reflect.DeepEqual(got, []string{doc.TemperatureRecords[0].Product}) {
				t.Errorf("typed_deliveries_temperature_records %v, the stored row says %q", got, doc.TemperatureRecords[0].Product)
			}
		})
	}
}

// testTarget is a fresh target of spec: "sqlite" (a file) or "postgres"
// (an empty database), closed when the test ends.
func testTarget(t *testing.T, spec string) *Target {
	t.Helper()
	if spec != "postgres" {
		return newSQLiteTarget(t)
	}
	tg, err := Open(context.Background(), testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close() })
	return tg
}
