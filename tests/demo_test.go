package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// `foodsafe demo` fills every collection (tombstones, soft-deleted rows,
// pending and uploaded files included) and deliveries with photographs,
// and prints a key that reads all of it; a second run keeps the data.
func TestDemoData(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	r := a.cli("demo")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, fullKey, r.Stdout)
	key := strings.TrimSpace(r.Stdout)

	var list struct {
		Data []struct{ RestaurantID string }
	}
	a.getAs(key, "/v1/restaurants").JSON(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, "demo-bistro", list.Data[0].RestaurantID)

	now := time.Now().UnixMilli()
	month := deliveriesPath("demo-bistro", window(now-30*24*3600*1000, now, 100))
	var page deliveryPage
	a.getAs(key, month).JSON(t, &page)
	require.Greater(t, len(page.Data), 15, "deliveries in the last 30 days")
	var photos int
	for _, d := range page.Data {
		if d.ImageCount > 0 {
			items := a.fileList(key, "/v1/restaurants/demo-bistro/deliveries/"+d.ID+"/images")
			require.Len(t, items, int(d.ImageCount))
			photos++
		}
	}
	require.Positive(t, photos, "some deliveries have photographs")

	var tombstones, softDeleted, pending, uploaded int
	for _, c := range catalog.Collections {
		records := a.walkAll(key, "demo-bistro", c.Name, 100)
		require.NotEmpty(t, records, "%s is populated", c.Name)
		for _, e := range records {
			if e.Deleted {
				tombstones++
				continue
			}
			var d map[string]any
			require.NoError(t, json.Unmarshal(e.Data, &d))
			if d["isDeleted"] == true {
				softDeleted++
			}
			if asset, ok := d["asset"].(map[string]any); ok {
				switch asset["status"] {
				case "pending":
					pending++
					require.Empty(t, a.fileList(key, assetsPath("demo-bistro", c.Name, e.ID)))
				case "uploaded":
					uploaded++
					items := a.fileList(key, assetsPath("demo-bistro", c.Name, e.ID))
					require.Len(t, items, 1)
					got := a.fetch(items[0].URL)
					require.Equal(t, http.StatusOK, got.Status)
					require.Equal(t, items[0].SHA256, sha256Hex(got.Body))
				}
			}
		}
	}
	require.Positive(t, tombstones)
	require.Positive(t, softDeleted)
	require.Positive(t, pending)
	require.Positive(t, uploaded)

	// Again: the data stays, a new key is printed.
	again := a.cli("demo")
	require.Equal(t, 0, again.Code, again.Stderr)
	require.Contains(t, again.Stderr, "already loaded")
	require.NotEqual(t, key, strings.TrimSpace(again.Stdout))
	var after deliveryPage
	a.getAs(key, month).JSON(t, &after)
	require.Equal(t, len(page.Data), len(after.Data), "no delivery added")
	require.Len(t, a.walkAll(strings.TrimSpace(again.Stdout), "demo-bistro", "areas", 100), 6, "no record added (five areas and the example)")
}
