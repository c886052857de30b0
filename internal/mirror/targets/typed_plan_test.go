package targets

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// planNodes lists every node of an EXPLAIN (FORMAT JSON) plan.
func planNodes(n map[string]any, out *[]map[string]any) {
	*out = append(*out, n)
	children, _ := n["Plans"].([]any)
	for _, c := range children {
		planNodes(c.(map[string]any), out)
	}
}

// The deletes that keep typed rows in step find each key through the
// primary key in PostgreSQL whatever the planner knows: tables never
// analyzed (a first sync; autovacuum off) and analyzed, custom and generic
// plans. Without statistics, restaurant_id = $1 AND id IN (...) read the
// whole restaurant for every page, and a first sync turned quadratic.
func TestTypedDeletesFindKeysThroughTheIndex(t *testing.T) {
	ctx := context.Background()
	tg, err := Open(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.EnsureCollection(ctx, "temperature-records"); err != nil {
		t.Fatal(err)
	}
	for page := range 20 {
		var recs []Record
		for i := range 100 {
			recs = append(recs, temp(fmt.Sprintf("t-%d-%d", page, i), int64(page*100+i+1), "3", "closed the door", "re-measured"))
		}
		if err := tg.Update(ctx, func(p *Page) error {
			return p.ApplyRecords(ctx, "r1", "temperature-records", recs, TombstoneMark, 0, false)
		}); err != nil {
			t.Fatal(err)
		}
	}
	var keys, ids, restaurants []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("t-7-%d", i))
		keys = append(keys, "'"+ids[i]+"'")
		restaurants = append(restaurants, "'r1'")
	}
	conn, err := tg.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			for _, r := range typed.Of("temperature-records") {
				exec(`ANALYZE ` + r.Name)
			}
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			for _, r := range typed.Of("temperature-records") {
				// Each EXPLAIN ANALYZE deletes for real, in a transaction
				// rolled back, so every plan meets the same rows.
				exec(`BEGIN`)
				exec(`SET LOCAL plan_cache_mode = ` + mode)
				exec(`PREPARE typed_delete (text[], text[]) AS ` + deleteKeysSQL(r))
				var plan string
				err := conn.QueryRowContext(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE typed_delete (ARRAY[`+strings.Join(restaurants, ", ")+`], ARRAY[`+strings.Join(keys, ", ")+`])`).Scan(&plan)
				exec(`ROLLBACK`)
				exec(`DEALLOCATE typed_delete`)
				if err != nil {
					t.Fatal(err)
				}
				var doc []struct{ Plan map[string]any }
				if err := json.Unmarshal([]byte(plan), &doc); err != nil {
					t.Fatal(err)
				}
				var nodes []map[string]any
				planNodes(doc[0].Plan, &nodes)
				where := fmt.Sprintf("%s (analyzed %v, %s)", r.Name, analyzed, mode)
				probed := false
				for _, n := range nodes {
					if n["Relation Name"] != r.Name {
						continue
					}
					switch n["Node Type"] {
					case "Index Scan", "Index Only Scan":
						cond, _ := n["Index Cond"].(string)
						if !strings.Contains(cond, "restaurant_id") || !strings.Contains(cond, "k.key") {
							t.Errorf("%s: an index scan on %q", where, cond)
						}
						probed = true
					case "Tid Scan", "ModifyTable":
					default:
						t.Errorf("%s: a %s reads the relation", where, n["Node Type"])
					}
					if removed, ok := n["Rows Removed by Filter"]; ok && removed.(float64) > 0 {
						t.Errorf("%s: %v rows read and filtered out", where, removed)
					}
				}
				if !probed {
					t.Errorf("%s: no key was looked up in the primary key: %s", where, plan)
				}
			}
		}
	}
	// And the statements delete what they should: the keys' rows, and
	// their elements', nothing else.
	if err := tg.tx(ctx, func(tx *sql.Tx) error {
		var keys []rowKey
		for _, id := range ids {
			keys = append(keys, rowKey{"r1", id})
		}
		return tg.typed.deleteKeys(ctx, tx, typed.Of("temperature-records"), keys)
	}); err != nil {
		t.Fatal(err)
	}
	var parents, elements, gone int
	if err := tg.db.QueryRow(`SELECT (SELECT count(*) FROM typed_temperature_records), (SELECT count(*) FROM typed_temperature_records_corrective_actions),
		(SELECT count(*) FROM typed_temperature_records WHERE id LIKE 't-7-%')`).Scan(&parents, &elements, &gone); err != nil {
		t.Fatal(err)
	}
	if parents != 1900 || elements != 3800 || gone != 0 {
		t.Errorf("after deleting 100 records: %d records, %d elements, %d of the deleted left", parents, elements, gone)
	}
}

// SQLite looks each key of the IN list (pairs of a restaurant and a key)
// up in the primary key.
func TestTypedDeletesFindKeysThroughTheIndexInSQLite(t *testing.T) {
	tg, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.EnsureCollection(context.Background(), "temperature-records"); err != nil {
		t.Fatal(err)
	}
	for _, r := range typed.Of("temperature-records") {
		key := "id"
		if r.Parent != "" {
			key = "parent_id"
		}
		rows, err := tg.db.Query(`EXPLAIN QUERY PLAN `+sqliteDeleteKeysSQL(r, 3), "r1", "a", "r1", "b", "r2", "c")
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			details = append(details, detail)
		}
		rows.Close()
		plan := strings.Join(details, "\n")
		if !strings.Contains(plan, "SEARCH "+r.Name+" USING ") || !strings.Contains(plan, "INDEX") || !strings.Contains(plan, "restaurant_id=? AND "+key+"=?") {
			t.Errorf("%s: %s", r.Name, plan)
		}
	}
}

// A free text as long as the API allows (10,000 characters) in a member
// named like a reference (traceability labels' groupId and userId are
// free text) is kept: only identifiers, at most 200 characters, are
// indexed, since a PostgreSQL index entry cannot hold 10,000 characters
// that do not compress.
func TestTypedRowsKeepTheLongestText(t *testing.T) {
	ctx := context.Background()
	tg, err := Open(ctx, testdb.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if err := tg.EnsureCollection(ctx, "traceability-labels"); err != nil {
		t.Fatal(err)
	}
	// Text that does not compress: PostgreSQL compresses an index entry
	// before it measures it.
	var b strings.Builder
	for sum := sha256.Sum256([]byte("lot")); b.Len() < 10000; sum = sha256.Sum256(sum[:]) {
		b.WriteString(base64.RawURLEncoding.EncodeToString(sum[:]))
	}
	long := b.String()[:10000]
	rec := Record{ID: "label-1", Sequence: 1, MutationID: "m", PayloadVersion: 1, Data: []byte(`{"timestamp":"1795766700000","groupId":"` + long +
		`","userId":"` + long + `","commentary":"` + long + `","asset":{"objectKey":"labels/1.png","status":"pending"}}`)}
	if err := tg.Update(ctx, func(p *Page) error {
		return p.ApplyRecords(ctx, "r1", "traceability-labels", []Record{rec}, TombstoneMark, 0, false)
	}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := tg.db.QueryRow(`SELECT group_id FROM typed_traceability_labels WHERE id = 'label-1'`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != long {
		t.Errorf("group_id of %d characters, want %d", len(got), len(long))
	}
}
