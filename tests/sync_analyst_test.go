package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/demo"
	"github.com/foodsafe/foodsafe/internal/mirror/export"
	mirrortargets "github.com/foodsafe/foodsafe/internal/mirror/targets"
	"github.com/foodsafe/foodsafe/internal/mirror/typed"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// The mirror as an analyst's database, on a mirror of the demo restaurant
// in SQLite and in PostgreSQL: every collection's typed relation holds the
// server's live records as typed columns (a delivery's measurements one
// row each), sequences sort as numbers, the Parquet export reads back in
// DuckDB row for row, the CSV export too, and every recipe of the partner
// sync guide gives the answer the server's own records give, on all three.
// Also: every image a delivery's list returns is mirrored whatever its
// imageCount, and data is kept as the guide says.
func TestSyncAnalystMirror(t *testing.T) {
	t.Parallel()
	s := newDemoServer(t)
	now := time.Now()

	// A delivery whose imageCount (the provider's figure) says 0, with
	// two images uploaded.
	const zeroCount = "delivery-count-0"
	d := deliveryJSON(zeroCount, now.Add(-2*time.Hour).UnixMilli())
	d["imageCount"] = 0
	r := s.a.putJSON(s.writeKey, "/v1/ingest/restaurants/"+demo.RestaurantID+"/deliveries/"+zeroCount, d)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var images []string
	for i := 1; i <= 2; i++ {
		img := append([]byte{0xff, 0xd8, 0xff, 0xe0}, []byte(fmt.Sprintf("photo %d of a delivery counted as having none", i))...)
		path := fmt.Sprintf("/v1/ingest/restaurants/%s/deliveries/%s/images/img-%d", demo.RestaurantID, zeroCount, i)
		r := s.a.upload(s.writeKey, path, "image/jpeg", digestHeader(img), img)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		images = append(images, sha256Hex(img))
	}
	// A reading sent as 1E+2: the form PostgreSQL's jsonb rewrites.
	const exponent = "temp-sent-as-1E2"
	data := json.RawMessage(`{"timestamp":"` + strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10) +
		`","value":1E+2,"unit":"°C","shift":"NIGHT","equipmentId":"equipment-1","correctiveActions":["Oven door open","Moved the stock"]}`)
	r = s.a.ingest(s.writeKey, demo.RestaurantID, "temperature-records", exponent, "m-exp",
		snapshot(demo.RestaurantID, exponent, "m-exp", now.Add(-time.Hour).UnixMilli(), false, data))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

	sqlite, postgres := sqliteTarget(t), testdb.EmptyURL(t)
	files := map[string]string{sqlite: t.TempDir(), postgres: t.TempDir()}
	for _, tc := range []struct {
		target string
		mode   string
	}{{sqlite, "mark"}, {postgres, "delete"}} {
		res := runSync(t, s.readKey, "--api", s.p.URL, "--to", tc.target, "--files", "--files-dir", files[tc.target], "--tombstones", tc.mode, "--json")
		require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
	}
	targets := []struct{ name, target string }{{"sqlite", sqlite}, {"postgres", postgres}}

	t.Run("typed relations hold the live records, typed", func(t *testing.T) {
		collectionsCovered(t)
		for _, tg := range targets {
			requireTypedEqual(t, s.a, tg.target, demo.RestaurantID)
			db, q := openTarget(t, tg.target)
			var n int
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM typed_relations WHERE source <> ?`), typed.DeliveriesSource).Scan(&n))
			require.Equal(t, len(typed.Relations())-4, n, "%s: every collection's relations exist", tg.name)
			// Tombstoned records are in the collection's table (mark mode)
			// but never in the typed relation.
			var tombstones, typed int
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM areas WHERE deleted`)).Scan(&tombstones))
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM typed_areas t JOIN areas a ON a.restaurant_id = t.restaurant_id AND a.id = t.id WHERE a.deleted`)).Scan(&typed))
			require.Zero(t, typed, tg.name)
			if tg.target == sqlite {
				require.Positive(t, tombstones, "the demo deletes an area")
			}
		}
	})

	t.Run("a delivery's measurements are one row each", func(t *testing.T) {
		live := serverLive(t, s.a, demo.RestaurantID)
		measurements := 0
		for _, d := range live["deliveries"] {
			var v struct{ TemperatureRecords []json.RawMessage }
			require.NoError(t, json.Unmarshal(d.data, &v))
			measurements += len(v.TemperatureRecords)
		}
		require.Greater(t, measurements, len(live["deliveries"]), "a delivery with two measurements is mirrored")
		for _, tg := range targets {
			db, q := openTarget(t, tg.target)
			var n int
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM typed_deliveries_temperature_records WHERE restaurant_id = ?`), demo.RestaurantID).Scan(&n))
			require.Equal(t, measurements, n, tg.name)
			var product string
			var value float64
			require.NoError(t, db.QueryRow(q(`SELECT product, value FROM typed_deliveries_temperature_records WHERE parent_id = ? AND ordinal = 2`), zeroCount).Scan(&product, &value))
			require.Equal(t, "Yoghurt", product)
			require.Equal(t, -1.0, value)
		}
	})

	t.Run("sequences sort as numbers", func(t *testing.T) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, s.a.cfg.DatabaseURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var want []int64
		rows, err := conn.Query(ctx, `SELECT sequence FROM records WHERE restaurant_id = $1 AND collection = 'temperature-records'
			ORDER BY sequence DESC LIMIT 5`, demo.RestaurantID)
		require.NoError(t, err)
		want, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		require.Greater(t, want[0], int64(100), "the stream has passed 99: text would sort 99 first")
		for _, tg := range targets {
			db, q := openTarget(t, tg.target)
			for _, tbl := range []string{"temperature_records", "typed_temperature_records"} {
				rows, err := db.Query(q(`SELECT sequence FROM `+tbl+` WHERE restaurant_id = ? ORDER BY sequence DESC LIMIT 5`), demo.RestaurantID)
				require.NoError(t, err)
				var got []int64
				for rows.Next() {
					var v int64
					require.NoError(t, rows.Scan(&v))
					got = append(got, v)
				}
				rows.Close()
				require.Equal(t, want, got, "%s %s: ORDER BY sequence DESC", tg.name, tbl)
			}
			var maxSeq int64
			require.NoError(t, db.QueryRow(q(`SELECT max(sequence) FROM temperature_records`)).Scan(&maxSeq))
			require.Equal(t, want[0], maxSeq, "%s: max(sequence)", tg.name)
			var heads int
			require.NoError(t, db.QueryRow(q(`SELECT count(*) FROM stream_heads WHERE head > 99`)).Scan(&heads))
			require.Positive(t, heads, "%s: heads compare as numbers", tg.name)
		}
	})

	t.Run("every image the list returns is mirrored, whatever the imageCount", func(t *testing.T) {
		for _, tg := range targets {
			requireFilesMirrored(t, s.a, tg.target, files[tg.target], demo.RestaurantID)
			db, q := openTarget(t, tg.target)
			rows, err := db.Query(q(`SELECT l.sha256 FROM file_links l JOIN files f ON f.sha256 = l.sha256
				WHERE l.restaurant_id = ? AND l.source = 'delivery-image' AND l.parent = ? ORDER BY l.item_id`), demo.RestaurantID, zeroCount)
			require.NoError(t, err)
			var got []string
			for rows.Next() {
				var sum string
				require.NoError(t, rows.Scan(&sum))
				got = append(got, sum)
			}
			rows.Close()
			require.Equal(t, images, got, tg.name)
		}
	})

	t.Run("data as the guide says", func(t *testing.T) {
		r := s.a.get("/v1/restaurants/"+demo.RestaurantID+"/collections/temperature-records/records/"+exponent, "Authorization", "Bearer "+s.readKey)
		require.Equal(t, http.StatusOK, r.Status)
		var env struct{ Data json.RawMessage }
		r.JSON(t, &env)
		require.Contains(t, string(env.Data), `"value":1E+2`)
		for _, tg := range targets {
			db, q := openTarget(t, tg.target)
			var stored string
			var value float64
			require.NoError(t, db.QueryRow(q(`SELECT data FROM temperature_records WHERE id = ?`), exponent).Scan(&stored))
			require.NoError(t, db.QueryRow(q(`SELECT value FROM typed_temperature_records WHERE id = ?`), exponent).Scan(&value))
			require.Equal(t, 100.0, value, "%s: the typed value", tg.name)
			if tg.target == sqlite {
				require.Equal(t, string(env.Data), stored, "SQLite keeps the record's text exactly as served")
				continue
			}
			// jsonb: the same JSON value in PostgreSQL's own form.
			require.NotEqual(t, string(env.Data), stored)
			require.NotContains(t, stored, "1E+2")
			require.Equal(t, canonicalJSON(t, string(env.Data)), canonicalJSON(t, stored))
		}
	})

	node := ""
	exports := map[string]string{}
	exportDir := t.TempDir() // outlives the subtest that writes it
	t.Run("the Parquet export reads back in DuckDB", func(t *testing.T) {
		node = requireDuckDB(t)
		kinds := map[typed.Kind]string{typed.Text: "VARCHAR", typed.Integer: "BIGINT", typed.Millis: "BIGINT", typed.Number: "DOUBLE",
			typed.Boolean: "BOOLEAN", typed.Time: "TIMESTAMP WITH TIME ZONE", typed.JSON: "VARCHAR"}
		for _, tg := range targets {
			dir := filepath.Join(exportDir, tg.name, "mirror-parquet")
			res := s.a.cliSync("export", "--from", tg.target, "--format", "parquet", "--out", dir, "--json")
			require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
			var written []export.File
			require.NoError(t, json.Unmarshal([]byte(res.Stdout), &written))
			relations := append(typed.Relations(), mirrortargets.FileTables()...)
			require.Len(t, written, len(relations))
			exports[tg.name] = dir

			var files map[string]struct {
				Columns []struct{ Name, Type string }
				Rows    [][]any
			}
			duckdb(t, node, nil, &files, "files", dir)
			require.Len(t, files, len(relations))
			db, q := openTarget(t, tg.target)
			for _, rel := range relations {
				f, ok := files[rel.Name+".parquet"]
				require.True(t, ok, "%s: %s.parquet", tg.name, rel.Name)
				var cols, want []string
				for i, c := range f.Columns {
					cols = append(cols, c.Name+" "+c.Type)
					want = append(want, rel.Columns[i].Name+" "+kinds[rel.Columns[i].Kind])
				}
				require.Equal(t, want, cols, "%s: %s's columns in Parquet", tg.name, rel.Name)
				got := [][]string{}
				for _, row := range f.Rows {
					cells := make([]string, len(row))
					for i, v := range row {
						cells[i] = cellOf(t, rel.Columns[i].Kind, v)
					}
					got = append(got, cells)
				}
				sortRows(got)
				rows := typedRows(t, db, q, rel, demo.RestaurantID)
				if rel.Name == "files" || rel.Name == "file_links" {
					require.NotEmpty(t, rows, "%s: the sync ran with --files", rel.Name)
				}
				require.Equal(t, rows, got, "%s: %s row for row", tg.name, rel.Name)
				for _, e := range written {
					if e.Relation == rel.Name {
						require.Equal(t, int64(len(f.Rows)), e.Rows, "%s: the rows export says it wrote", rel.Name)
					}
				}
			}
		}
	})

	t.Run("the CSV export", func(t *testing.T) {
		dir := t.TempDir()
		res := s.a.cliSync("export", "--from", sqlite, "--format", "csv", "--out", dir)
		require.Equal(t, 0, res.Code, "stderr:\n%s", res.Stderr)
		require.Contains(t, res.Stdout, "typed_deliveries_temperature_records")
		require.Contains(t, res.Stdout, "file_links")
		db, q := openTarget(t, sqlite)
		for _, rel := range append(typed.Relations(), mirrortargets.FileTables()...) {
			f, err := os.Open(filepath.Join(dir, rel.Name+".csv"))
			require.NoError(t, err)
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			require.NoError(t, err)
			var names []string
			for _, c := range rel.Columns {
				names = append(names, c.Name)
			}
			require.Equal(t, names, recs[0], "%s: header", rel.Name)
			got := [][]string{}
			for _, rec := range recs[1:] {
				for i, v := range rec {
					switch {
					case v == "":
						rec[i] = nullCell
					case rel.Columns[i].Kind == typed.Number:
						f, err := strconv.ParseFloat(v, 64)
						require.NoError(t, err)
						rec[i] = cellOf(t, typed.Number, f)
					case rel.Columns[i].Kind == typed.JSON:
						rec[i] = canonicalJSON(t, v)
					}
				}
				got = append(got, rec)
			}
			sortRows(got)
			want := typedRows(t, db, q, rel, demo.RestaurantID)
			for _, row := range want {
				for i, v := range row {
					if v == "" {
						row[i] = nullCell // CSV cannot tell an empty text from null
					}
				}
			}
			require.Equal(t, want, got, "%s: row for row", rel.Name)
		}
	})

	t.Run("export refuses what it cannot read, creating nothing", func(t *testing.T) {
		dir := t.TempDir()
		missing := filepath.Join(dir, "no-such-mirror.db")
		for _, tc := range []struct {
			args []string
			says string
		}{
			{[]string{"export", "--from", "sqlite:" + missing, "--out", dir}, "no such file"},
			{[]string{"export", "--from", s.a.cfg.DatabaseURL, "--out", dir}, "is not a mirror foodsafe-sync made"},
			{[]string{"export", "--from", sqlite, "--out", dir, "--format", "xlsx"}, "--format must be parquet or csv"},
			{[]string{"export", "--from", sqlite}, "--from and --out are required"},
			{[]string{"export", "--from", "mysql://h/db", "--out", dir}, "give sqlite:PATH or a postgres:// URL"},
		} {
			r := s.a.cliSync(tc.args...)
			require.Equal(t, 2, r.Code, "%v: stdout %s stderr %s", tc.args, r.Stdout, r.Stderr)
			require.Contains(t, r.Stderr, tc.says, "%v", tc.args)
		}
		_, err := os.Stat(missing)
		require.True(t, os.IsNotExist(err), "an export creates no mirror")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "nothing was written")
	})

	t.Run("the guide's recipes", func(t *testing.T) {
		recipes := guideRecipes(t)
		require.GreaterOrEqual(t, len(recipes), 5, "the guide has at least five recipes")
		names := slices.Sorted(mapKeys(recipes))
		require.Equal(t, slices.Sorted(mapKeys(recipeAnswers)), names, "a test answer for every recipe of the guide, and a recipe for every answer")
		pgTarget := postgres + "&timezone=UTC"
		if !strings.Contains(postgres, "?") {
			pgTarget = postgres + "?timezone=UTC"
		}
		if node == "" {
			node = requireDuckDB(t)
		}
		require.NotEmpty(t, exports["sqlite"], "the Parquet export ran")
		duckDir := filepath.Dir(exports["sqlite"]) // holds mirror-parquet/
		// A recipe about "the last 30 days" runs a moment after its
		// answer is computed: when the answers at the start and at the
		// end differ (a record crossed a boundary meanwhile), run again.
		for attempt := 1; ; attempt++ {
			before := time.Now()
			expected := map[string][][]string{}
			for _, name := range names {
				expected[name] = recipeAnswers[name](t, s.a, before)
			}
			got := map[string][][]string{}
			for _, engine := range []struct{ name, target string }{{"postgres", pgTarget}, {"sqlite", sqlite}} {
				db, _ := openTarget(t, engine.target)
				for _, name := range names {
					sqlText, ok := recipes[name][engine.name]
					require.True(t, ok, "recipe %s has no %s version", name, engine.name)
					got[engine.name+" "+name] = queryRecipe(t, db, sqlText)
				}
			}
			var stmts []string
			for _, name := range names {
				sqlText, ok := recipes[name]["duckdb"]
				require.True(t, ok, "recipe %s has no duckdb version", name)
				stmts = append(stmts, sqlText)
			}
			in, err := json.Marshal(stmts)
			require.NoError(t, err)
			var answers []struct {
				Columns []string
				Rows    [][]any
			}
			duckdb(t, node, in, &answers, "query", duckDir)
			for i, name := range names {
				rows := [][]string{}
				for _, row := range answers[i].Rows {
					cells := make([]string, len(row))
					for j, v := range row {
						cells[j] = recipeCell(t, v)
					}
					rows = append(rows, cells)
				}
				got["duckdb "+name] = rows
			}
			after := time.Now()
			stable := true
			for _, name := range names {
				if !slices.EqualFunc(expected[name], recipeAnswers[name](t, s.a, after), slices.Equal) {
					stable = false
				}
			}
			if !stable && attempt < 3 {
				continue
			}
			require.True(t, stable, "the answers kept changing while the recipes ran")
			for _, name := range names {
				require.NotEmpty(t, expected[name], "recipe %s answers something on the demo restaurant", name)
				for _, engine := range []string{"postgres", "sqlite", "duckdb"} {
					require.Equal(t, expected[name], got[engine+" "+name], "recipe %s on %s", name, engine)
				}
			}
			return
		}
	})
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// recipeMarker precedes each recipe's code block in the guide:
// <!-- recipe: NAME ENGINE... -->.
var recipeMarker = regexp.MustCompile("(?s)<!-- recipe: ([a-z0-9-]+) ((?:postgres|sqlite|duckdb)(?: (?:postgres|sqlite|duckdb))*) -->\n```sql\n(.*?)```")

// guideRecipes extracts every recipe of the partner sync guide: name ->
// engine -> SQL.
func guideRecipes(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile("../docs/partners-sync.md")
	require.NoError(t, err)
	require.Equal(t, strings.Count(string(b), "<!-- recipe:"), len(recipeMarker.FindAllIndex(b, -1)),
		"every recipe marker is followed by its sql block")
	out := map[string]map[string]string{}
	for _, m := range recipeMarker.FindAllStringSubmatch(string(b), -1) {
		if out[m[1]] == nil {
			out[m[1]] = map[string]string{}
		}
		for _, engine := range strings.Fields(m[2]) {
			_, dup := out[m[1]][engine]
			require.False(t, dup, "recipe %s has two %s versions", m[1], engine)
			out[m[1]][engine] = m[3]
		}
	}
	return out
}

// queryRecipe runs a recipe and normalises its answer, in its order.
func queryRecipe(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	require.NoError(t, err, q)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	out := [][]string{}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		cells := make([]string, len(vals))
		for i, v := range vals {
			cells[i] = recipeCell(t, v)
		}
		out = append(out, cells)
	}
	require.NoError(t, rows.Err())
	return out
}

// The answers of the guide's recipes, computed from the server's own
// records at a given time, as the recipe's words say, in the recipe's
// order.
var recipeAnswers = map[string]func(t testing.TB, a *app, now time.Time) [][]string{
	"non-compliant-deliveries": func(t testing.TB, a *app, now time.Time) [][]string {
		type row struct {
			at      int64
			cells   []string
			ordinal int
		}
		var rows []row
		for _, d := range serverDeliveries(t, a) {
			if d.IsCompliant || d.OccurredAt < now.UTC().AddDate(0, 0, -30).UnixMilli() {
				continue
			}
			at := isoOf(d.OccurredAt)
			if len(d.NonComplianceReasons) == 0 {
				rows = append(rows, row{d.OccurredAt, []string{at, d.SupplierName, nullCell}, 0})
			}
			for i, reason := range d.NonComplianceReasons {
				rows = append(rows, row{d.OccurredAt, []string{at, d.SupplierName, reason}, i})
			}
		}
		sort.SliceStable(rows, func(i, j int) bool {
			if rows[i].at != rows[j].at {
				return rows[i].at > rows[j].at
			}
			return rows[i].ordinal < rows[j].ordinal
		})
		out := [][]string{}
		for _, r := range rows {
			out = append(out, r.cells)
		}
		return out
	},
	"latest-temperature": func(t testing.TB, a *app, _ time.Time) [][]string {
		equipment := liveData(t, a, "equipment")
		latest := map[string]map[string]any{}
		latestID := map[string]string{}
		for id, r := range liveData(t, a, "temperature-records") {
			e := r["equipmentId"].(string)
			if cur, ok := latest[e]; !ok || ms(t, r["timestamp"]) > ms(t, cur["timestamp"]) ||
				(ms(t, r["timestamp"]) == ms(t, cur["timestamp"]) && id > latestID[e]) {
				latest[e], latestID[e] = r, id
			}
		}
		out := [][]string{}
		for e, r := range latest {
			eq, ok := equipment[e]
			if !ok {
				continue
			}
			v := num(t, r["value"])
			verdict := "ok"
			if (eq["min"] != nil && v < num(t, eq["min"])) || (eq["max"] != nil && v > num(t, eq["max"])) {
				verdict = "out of range"
			}
			out = append(out, []string{eq["name"].(string), recipeCell(t, v), r["unit"].(string), isoOf(ms(t, r["timestamp"])), verdict})
		}
		slices.SortFunc(out, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
		return out
	},
	"out-of-range-per-week": func(t testing.TB, a *app, _ time.Time) [][]string {
		equipment := liveData(t, a, "equipment")
		type agg struct {
			n        int
			low, top float64
		}
		groups := map[[2]string]*agg{}
		for _, r := range liveData(t, a, "temperature-records") {
			eq, ok := equipment[r["equipmentId"].(string)]
			if !ok {
				continue
			}
			v := num(t, r["value"])
			if !((eq["min"] != nil && v < num(t, eq["min"])) || (eq["max"] != nil && v > num(t, eq["max"]))) {
				continue
			}
			day := time.UnixMilli(ms(t, r["timestamp"])).UTC()
			monday := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
			k := [2]string{monday.Format("2006-01-02"), eq["name"].(string)}
			g := groups[k]
			if g == nil {
				g = &agg{low: v, top: v}
				groups[k] = g
			}
			g.n++
			g.low, g.top = min(g.low, v), max(g.top, v)
		}
		out := [][]string{}
		for k, g := range groups {
			out = append(out, []string{k[0], k[1], strconv.Itoa(g.n), recipeCell(t, g.low), recipeCell(t, g.top)})
		}
		slices.SortFunc(out, func(x, y []string) int { return slices.Compare(x[:2], y[:2]) })
		return out
	},
	"overdue-cleaning-tasks": func(t testing.TB, a *app, now time.Time) [][]string {
		last := map[string]int64{}
		for _, r := range liveData(t, a, "cleaning-task-records") {
			task := r["cleaningTaskId"].(string)
			last[task] = max(last[task], ms(t, r["timestamp"]))
		}
		out := [][]string{}
		for id, task := range liveData(t, a, "cleaning-tasks") {
			if task["isDeleted"].(bool) {
				continue
			}
			every := int(num(t, task["recurrence"]))
			done, ok := last[id]
			if ok && done >= now.UTC().AddDate(0, 0, -every).UnixMilli() {
				continue
			}
			lastDone := nullCell
			if ok {
				lastDone = isoOf(done)
			}
			out = append(out, []string{task["name"].(string), strconv.Itoa(every), lastDone})
		}
		slices.SortFunc(out, func(x, y []string) int { return strings.Compare(x[0], y[0]) })
		return out
	},
	"downloaded-files": func(t testing.TB, a *app, _ time.Time) [][]string {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `
			SELECT source, count(*)::text, count(DISTINCT sha256)::text, sum(bytes)::text FROM (
				SELECT 'asset' AS source, data->'asset'->>'sha256' AS sha256, (data->'asset'->>'byteLength')::bigint AS bytes
				FROM records WHERE restaurant_id = $1 AND NOT deleted AND data->'asset'->>'status' = 'uploaded'
				UNION ALL
				SELECT 'delivery-image', sha256, byte_length FROM delivery_images WHERE restaurant_id = $1) l
			GROUP BY source ORDER BY source`, demo.RestaurantID)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
			cells := make([]string, 4)
			err := r.Scan(&cells[0], &cells[1], &cells[2], &cells[3])
			return cells, err
		})
		require.NoError(t, err)
		return out
	},
	"files-per-record": func(t testing.TB, a *app, _ time.Time) [][]string {
		out := [][]string{}
		for _, c := range []string{"cleaning-task-pictures", "drive-files", "traceability-labels"} {
			var records, uploaded, pending, without int
			var bytes int64
			for _, r := range liveData(t, a, c) {
				records++
				asset, ok := r["asset"].(map[string]any)
				switch {
				case !ok:
					without++
				case asset["status"] == "uploaded":
					uploaded++
					bytes += int64(num(t, asset["byteLength"]))
				case asset["status"] == "pending":
					pending++
				}
			}
			out = append(out, []string{c, strconv.Itoa(records), strconv.Itoa(uploaded), strconv.Itoa(pending), strconv.Itoa(without), strconv.FormatInt(bytes, 10)})
		}
		return out
	},
	"slow-cooling": func(t testing.TB, a *app, _ time.Time) [][]string {
		type row struct {
			begin int64
			cells []string
		}
		var rows []row
		for _, r := range liveData(t, a, "cooling") {
			begin := ms(t, r["beginDate"])
			minutes, end := nullCell, nullCell
			if r["endDate"] != nil {
				if ms(t, r["endDate"])-begin <= 2*3600*1000 {
					continue
				}
				minutes = strconv.FormatInt((ms(t, r["endDate"])-begin)/60000, 10)
			}
			if r["endTemperature"] != nil {
				end = recipeCell(t, num(t, r["endTemperature"]))
			}
			rows = append(rows, row{begin, []string{r["product"].(string), isoOf(begin), recipeCell(t, num(t, r["beginTemperature"])), end, minutes}})
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].begin < rows[j].begin })
		out := [][]string{}
		for _, r := range rows {
			out = append(out, r.cells)
		}
		return out
	},
}

func isoOf(ms int64) string { return time.UnixMilli(ms).UTC().Format(isoMillis) }

func ms(t testing.TB, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(v.(string), 10, 64)
	require.NoError(t, err)
	return n
}

func num(t testing.TB, v any) float64 {
	t.Helper()
	f, err := v.(json.Number).Float64()
	require.NoError(t, err)
	return f
}

// liveData is the data of a collection's live demo records, by id.
func liveData(t testing.TB, a *app, collection string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, s := range serverLive(t, a, demo.RestaurantID)[collection] {
		var v map[string]any
		d := json.NewDecoder(bytes.NewReader(s.data))
		d.UseNumber()
		require.NoError(t, d.Decode(&v))
		out[s.id] = v
	}
	return out
}

type serverDelivery struct {
	OccurredAt           int64
	IsCompliant          bool
	SupplierName         string
	NonComplianceReasons []string
}

func serverDeliveries(t testing.TB, a *app) []serverDelivery {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.cfg.DatabaseURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT occurred_at, is_compliant, supplier_name, non_compliance_reasons FROM deliveries WHERE restaurant_id = $1`, demo.RestaurantID)
	require.NoError(t, err)
	var out []serverDelivery
	for rows.Next() {
		var d serverDelivery
		require.NoError(t, rows.Scan(&d.OccurredAt, &d.IsCompliant, &d.SupplierName, &d.NonComplianceReasons))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}
