package tests

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/config"
)

// A key attaches at most FOODSAFE_UPLOAD_QUOTA_BYTES of files to a
// restaurant per UTC day, on either file store (the count lives above
// them): beyond, 429 upload-quota-exceeded with a Retry-After to the next
// UTC midnight, and nothing is stored. A replay of the same bytes for the
// same file counts nothing; assets and delivery images count alike;
// another key of the same restaurant is not affected; the next day the
// key uploads again.
func TestUploadQuota(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testUploadQuota)
}

func testUploadQuota(t *testing.T, b backend) {
	// Yesterday, an hour before midnight (UTC): a day boundary the test
	// crosses by moving the clock, never ahead of the real one.
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	var now atomic.Int64
	now.Store(midnight.Add(-time.Hour).UnixNano())
	a := b.newApp(t, withConfig(func(c *config.Config) { c.UploadQuotaBytes = 1000 }),
		withClock(func() time.Time { return time.Unix(0, now.Load()) }))
	a.addRestaurants("r1", "r2")
	device := a.newKey(grant("r1", "drive-files:write", "drive-files:read"), grant("r2", "drive-files:write"))
	other := a.newKey(grant("r1", "drive-files:write"))
	provider := a.newKey(grant("r1", "deliveries:write", "delivery-images:write"))
	record := func(key, restaurant, id string) string {
		a.put(key, restaurant, "drive-files", id, "m-"+id, map[string]any{"s3Key": "k", "name": id, "sizeBytes": 1,
			"asset": map[string]any{"objectKey": id, "status": "pending"}})
		return assetPath(restaurant, "drive-files", id, id)
	}
	file := func(n int, fill byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = fill
		}
		return b
	}
	upload := func(key, path string, body []byte) response {
		return a.upload(key, path, "application/octet-stream", digestHeader(body), body)
	}
	exceeded := func(r response, retryAfter time.Duration) {
		p := requireProblem(t, r, http.StatusTooManyRequests, "upload-quota-exceeded")
		require.Contains(t, p.Detail, "may attach 1000 a day")
		require.Equal(t, strconv.Itoa(int(retryAfter/time.Second)), r.Header.Get("Retry-After"))
	}

	f1, f1Bytes := record(device, "r1", "f1"), file(600, 'a')
	require.Equal(t, http.StatusOK, upload(device, f1, f1Bytes).Status)
	// The same bytes for the same file again store nothing and count
	// nothing: were they counted, the 300 bytes below would be refused.
	r := upload(device, f1, f1Bytes)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	require.Equal(t, http.StatusOK, upload(device, record(device, "r1", "f2"), file(300, 'b')).Status)

	f3 := record(device, "r1", "f3")
	require.Equal(t, http.StatusOK, upload(device, f3, file(100, 'c')).Status, "exactly the quota")
	r = upload(device, f3, file(100, 'c'))
	require.Equal(t, http.StatusOK, r.Status, "a replay at the quota reads its answer: %s", r.Body)
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))

	f4 := record(device, "r1", "f4")
	exceeded(upload(device, f4, file(1, 'd')), time.Hour)
	exceeded(a.uploadChunked(device, f4, "application/octet-stream", digestHeader(file(1, 'd')), file(1, 'd')), time.Hour)
	require.Empty(t, a.fileList(device, assetsPath("r1", "drive-files", "f4")), "nothing was stored")
	require.Equal(t, http.StatusOK, upload(other, record(other, "r1", "o1"), file(1000, 'e')).Status,
		"another key of the restaurant has its own quota")
	require.Equal(t, http.StatusOK, upload(device, record(device, "r2", "g1"), file(1000, 'f')).Status,
		"the key has a quota in each restaurant")

	// Delivery images count as assets do, and a declared Content-Length
	// is refused whole before the body is read.
	require.Equal(t, http.StatusOK, a.putJSON(provider, "/v1/ingest/restaurants/r1/deliveries/d1", deliveryJSON("d1", 1000)).Status)
	image := func(id string, n int) response {
		img := photoBytes("image/png", n)
		return a.upload(provider, "/v1/ingest/restaurants/r1/deliveries/d1/images/"+id, "image/png", digestHeader(img), img)
	}
	require.Equal(t, http.StatusOK, image("i1", 600-16).Status)
	r = image("i1", 600-16)
	require.Equal(t, http.StatusOK, r.Status, "a replayed image counts nothing")
	exceeded(image("i2", 500-16), time.Hour)
	require.Equal(t, http.StatusOK, image("i2", 400-16).Status)

	// The next UTC day, the key uploads again.
	now.Store(midnight.Add(time.Second).UnixNano())
	r = upload(device, f4, file(1, 'd'))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	exceeded(upload(device, record(device, "r1", "f5"), file(1000, 'g')), 24*time.Hour-time.Second)
	require.NotContains(t, a.logs.String(), `"status":500`)
}
