package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// deepCopy clones a JSON-shaped value.
func deepCopy(t testing.TB, v map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, v), &out))
	return out
}

// setAt replaces the value at a JSON Pointer of the form /a/b inside m.
func setAt(m map[string]any, ptr string, v any) {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := m
	for _, p := range parts[:len(parts)-1] {
		cur = cur[p].(map[string]any)
	}
	cur[parts[len(parts)-1]] = v
}

func getAt(m map[string]any, ptr string) any {
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var cur any = m
	for _, p := range parts {
		cur = cur.(map[string]any)[p]
	}
	return cur
}

// wrongTypeFor returns a value of another JSON type than v.
func wrongTypeFor(v any) any {
	switch v.(type) {
	case string:
		return 12
	case float64:
		return "12"
	case bool:
		return "yes"
	case []any:
		return "not a list"
	default:
		return []any{1}
	}
}

// For every one of the 24 collections: the full and the minimal example
// are accepted and echoed, and each kind of invalid value is refused with a
// pointer to it.
func TestCollectionSchemas(t *testing.T) {
	t.Parallel()
	fixtures := loadCollectionFixtures(t)
	require.Len(t, fixtures, len(catalog.Collections))
	a := newApp(t)
	a.addRestaurants("r1")
	var all []string
	for _, c := range catalog.Collections {
		all = append(all, c.WriteScope())
	}
	key := a.newKey(grant("r1", all...))

	for _, col := range catalog.Collections {
		fx, ok := fixtures[col.Name]
		require.True(t, ok, "fixture for %s", col.Name)
		t.Run(col.Name, func(t *testing.T) {
			n := 0
			send := func(data map[string]any) response {
				n++
				id, mut := fmt.Sprintf("rec-%d", n), fmt.Sprintf("%s-mut-%d", col.Name, n)
				return a.ingest(key, "r1", col.Name, id, mut, snapshot("r1", id, mut, 1_700_000_000_000, false, data))
			}
			expectInvalid := func(t *testing.T, r response, pointer string) {
				t.Helper()
				p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
				var ptrs []string
				for _, e := range p.Errors {
					ptrs = append(ptrs, e.Pointer)
				}
				require.Contains(t, ptrs, pointer, "errors: %+v", p.Errors)
			}

			for name, ex := range map[string]map[string]any{"full": fx.Full, "minimal": fx.Minimal} {
				r := send(deepCopy(t, ex))
				require.Equal(t, http.StatusOK, r.Status, "%s example: %s", name, r.Body)
				var got struct{ Data envelopeDoc }
				r.JSON(t, &got)
				require.JSONEq(t, string(mustJSON(t, ex)), string(got.Data.Data), "%s example stored as sent", name)
			}

			t.Run("extra member", func(t *testing.T) {
				d := deepCopy(t, fx.Full)
				d["zzUnknown"] = true
				expectInvalid(t, send(d), "/data/zzUnknown")
			})
			t.Run("wrong type", func(t *testing.T) {
				d := deepCopy(t, fx.Full)
				setAt(d, fx.WrongType, wrongTypeFor(getAt(d, fx.WrongType)))
				expectInvalid(t, send(d), "/data"+fx.WrongType)
			})
			t.Run("over-long string", func(t *testing.T) {
				d := deepCopy(t, fx.Full)
				setAt(d, *fx.Text, strings.Repeat("x", 10001))
				expectInvalid(t, send(d), "/data"+*fx.Text)
			})
			t.Run("1001-item array", func(t *testing.T) {
				if fx.Array == nil {
					// No list in this collection's data: a list smuggled
					// in is an unknown member.
					d := deepCopy(t, fx.Full)
					d["zzList"] = make([]any, 1001)
					expectInvalid(t, send(d), "/data/zzList")
					return
				}
				d := deepCopy(t, fx.Full)
				var first any = "item"
				if l, ok := getAt(d, *fx.Array).([]any); ok && len(l) > 0 {
					first = l[0]
				}
				items := make([]any, 1001)
				for i := range items {
					items[i] = first
				}
				setAt(d, *fx.Array, items)
				expectInvalid(t, send(d), "/data"+*fx.Array)
				items = items[:1000]
				setAt(d, *fx.Array, items)
				require.Equal(t, http.StatusOK, send(d).Status, "1000 items are fine")
			})
			t.Run("bad timestamp", func(t *testing.T) {
				for _, bad := range []any{"01", "-1", "1.5", "12345678901234567890", 1700000000000, "2026-01-01"} {
					if fx.Timestamp == nil {
						n++
						id, mut := fmt.Sprintf("rec-%d", n), fmt.Sprintf("%s-mut-%d", col.Name, n)
						b := snapshot("r1", id, mut, 0, false, deepCopy(t, fx.Full))
						b["capturedAt"] = bad
						expectInvalid(t, a.ingest(key, "r1", col.Name, id, mut, b), "/capturedAt")
						continue
					}
					d := deepCopy(t, fx.Full)
					setAt(d, *fx.Timestamp, bad)
					expectInvalid(t, send(d), "/data"+*fx.Timestamp)
				}
			})
			t.Run("bad id", func(t *testing.T) {
				for _, bad := range []string{"", "-starts-with-dash", "has space", "sl/ash", strings.Repeat("a", 201)} {
					if fx.ID == nil {
						n++
						mut := fmt.Sprintf("%s-mut-%d", col.Name, n)
						b := snapshot("r1", bad, mut, 0, false, deepCopy(t, fx.Full))
						expectInvalid(t, a.ingest(key, "r1", col.Name, "good-id", mut, b), "/id")
						continue
					}
					d := deepCopy(t, fx.Full)
					setAt(d, *fx.ID, bad)
					expectInvalid(t, send(d), "/data"+*fx.ID)
				}
			})
		})
	}
}

// The boundaries of spec 4.6.3 are inclusive: 10000 characters (counted as
// characters, not bytes), 200-character ids, 19-digit timestamps, the
// largest safe integer.
func TestIngestBoundariesAccepted(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-tasks:write", "areas:write"))
	long := strings.Repeat("é", 10000)
	id200 := strings.Repeat("a", 200)
	e := a.put(key, "r1", "cleaning-tasks", id200, "m1", map[string]any{
		"index": 9007199254740991, "name": long, "recurrence": -9007199254740991, "isDeleted": false, "areaId": id200,
	})
	require.Equal(t, id200, e.ID)
	// The largest storable timestamp is well-formed, but lies in the future:
	// refused as such; the latest accepted capture is the server's now.
	p := requireProblem(t, a.ingest(key, "r1", "areas", "a1", "m2", snapshot("r1", "a1", "m2", 9223372036854775807, false,
		map[string]any{"name": "x", "isDeleted": false})), http.StatusBadRequest, "invalid-request")
	require.Contains(t, p.Errors[0].Detail, "future")
	r := a.ingest(key, "r1", "areas", "a1", "m2b", snapshot("r1", "a1", "m2b", time.Now().UnixMilli(), false, map[string]any{"name": "x", "isDeleted": false}))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	for name, data := range map[string]map[string]any{
		"beyond safe integer": {"index": 9007199254740992, "name": "x", "recurrence": 1, "isDeleted": false},
		"fractional integer":  {"index": 1.5, "name": "x", "recurrence": 1, "isDeleted": false},
		"10001 characters":    {"index": 1, "name": long + "é", "recurrence": 1, "isDeleted": false},
	} {
		r := a.ingest(key, "r1", "cleaning-tasks", "x", "m-"+strings.ReplaceAll(name, " ", "-"),
			snapshot("r1", "x", "m-"+strings.ReplaceAll(name, " ", "-"), 1, false, data))
		requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	}
	r = a.ingest(key, "r1", "areas", "a2", "m3", snapshot("r1", "a2", "m3", 0, false, map[string]any{"name": "x", "isDeleted": false}))
	require.Equal(t, http.StatusOK, r.Status, "capturedAt 0 is a valid timestamp: %s", r.Body)
	b := snapshot("r1", "a3", "m4", 0, false, map[string]any{"name": "x", "isDeleted": false})
	b["capturedAt"] = "9223372036854775808"
	p = requireProblem(t, a.ingest(key, "r1", "areas", "a3", "m4", b), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/capturedAt", p.Errors[0].Pointer)
}

// cooling, freezing and reheating: endTemperature is null together with
// endDate (spec 2.5). A closed cycle carries both, an open one neither (an
// absent member counts as null); one without the other is a 400 pointing
// at endTemperature, and nothing is stored.
func TestCycleEndsAreNullTogether(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cooling:write", "cooling:read", "freezing:write", "reheating:write"))
	base := func(end map[string]any) map[string]any {
		d := map[string]any{"timestamp": "1700000000000", "product": "Soup", "beginDate": "1700000000000", "beginTemperature": 63}
		for k, v := range end {
			d[k] = v
		}
		return d
	}
	n := 0
	for _, col := range []string{"cooling", "freezing", "reheating"} {
		for name, c := range map[string]struct {
			end map[string]any
			ok  bool
		}{
			"closed":                          {map[string]any{"endDate": "1700007200000", "endTemperature": 8}, true},
			"open, both null":                 {map[string]any{"endDate": nil, "endTemperature": nil}, true},
			"open, both absent":               {nil, true},
			"open, endDate absent, temp null": {map[string]any{"endTemperature": nil}, true},
			"null endDate with temperature":   {map[string]any{"endDate": nil, "endTemperature": 3}, false},
			"absent endDate with temperature": {map[string]any{"endTemperature": 3}, false},
			"endDate with null temperature":   {map[string]any{"endDate": "1700007200000", "endTemperature": nil}, false},
			"endDate without temperature":     {map[string]any{"endDate": "1700007200000"}, false},
		} {
			t.Run(col+"/"+name, func(t *testing.T) {
				n++
				id, mut := fmt.Sprintf("c-%d", n), fmt.Sprintf("%s-m-%d", col, n)
				r := a.ingest(key, "r1", col, id, mut, snapshot("r1", id, mut, 1_700_000_000_000, false, base(c.end)))
				if c.ok {
					require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
					return
				}
				p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
				var ptrs []string
				for _, e := range p.Errors {
					ptrs = append(ptrs, e.Pointer)
				}
				require.Equal(t, []string{"/data/endTemperature"}, ptrs, "errors: %+v", p.Errors)
				if col == "cooling" {
					requireProblem(t, a.getAs(key, recordsPath("r1", col)+"/"+id), http.StatusNotFound, "not-found")
				}
			})
		}
	}
}
