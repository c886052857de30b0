package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/blob"
)

// Three `foodsafe serve` processes against one PostgreSQL database, one
// Redis and one object store, with requests spread round-robin: the
// process holds no state of its own, so any replica answers any request.
func TestReplicas(t *testing.T) {
	t.Parallel()
	srv := sharedS3(t)
	// The in-process app provides the database, the bucket and the
	// helpers that arrange data; its own server is not used.
	a := newApp(t, withS3(srv))
	a.addRestaurants("r1", "r2")
	env := []string{
		"DATABASE_URL=" + a.cfg.DatabaseURL,
		"FOODSAFE_BLOB_URL=" + a.cfg.BlobURL,
		"REDIS_URL=" + testRedisURL(t),
		"FOODSAFE_REDIS_PREFIX=foodsafe-test:" + rand.Text(),
		"FOODSAFE_CURSOR_KEY=" + rand.Text() + rand.Text(),
		"FOODSAFE_RATE_LIMIT=300",
	}
	procs := make([]*serveProc, 3)
	reps := make([]*app, 3)
	for i := range procs {
		procs[i] = startServe(t, env...)
		reps[i] = a.replica(procs[i])
	}
	A, B, C := reps[0], reps[1], reps[2]
	next := 0
	rr := func() *app { r := reps[next%len(reps)]; next++; return r }

	t.Run("upload through A, listed through B, downloaded from the store", func(t *testing.T) {
		key := a.newKey(grant("r1", "drive-files:write", "drive-files:read"))
		A.put(key, "r1", "drive-files", "f1", "m-f1", map[string]any{"s3Key": "k", "name": "plan.pdf", "sizeBytes": 1,
			"asset": map[string]any{"objectKey": "plan.pdf", "status": "pending"}})
		pdf := []byte("%PDF-1.7 " + strings.Repeat("haccp plan ", 2000))
		require.Equal(t, http.StatusOK, A.upload(key, assetPath("r1", "drive-files", "f1", "plan.pdf"), "application/pdf", digestHeader(pdf), pdf).Status)
		items := B.fileList(key, assetsPath("r1", "drive-files", "f1"))
		require.Len(t, items, 1)
		loc, err := blob.ParseS3URL(a.cfg.BlobURL)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(items[0].URL, loc.Endpoint+"/"), "served by the store, not a replica: %s", items[0].URL)
		got := fetchURL(t, http.MethodGet, items[0].URL)
		require.Equal(t, http.StatusOK, got.Status)
		require.Equal(t, pdf, got.Body)
		onC := C.fileList(key, assetsPath("r1", "drive-files", "f1"))
		require.Len(t, onC, 1)
		require.Equal(t, items[0].SHA256, onC[0].SHA256)
	})

	t.Run("a walk's cursor from A continues on C", func(t *testing.T) {
		key := a.newKey(grant("r1", "areas:write", "areas:read"))
		for i := range 7 {
			id := "area-" + strconv.Itoa(i)
			rr().put(key, "r1", "areas", id, "m-"+id, area("Kitchen "+strconv.Itoa(i)))
		}
		first := A.walkStep(key, "r1", "areas", 3, "")
		require.Len(t, first.Data, 3)
		require.NotNil(t, first.NextCursor)
		second := C.walkStep(key, "r1", "areas", 3, *first.NextCursor)
		require.Len(t, second.Data, 3)
		require.NotNil(t, second.NextCursor)
		third := B.walkStep(key, "r1", "areas", 3, *second.NextCursor)
		require.Nil(t, third.NextCursor)
		var ids []string
		for _, p := range []walkPage{first, second, third} {
			for _, e := range p.Data {
				ids = append(ids, e.ID)
			}
		}
		var want []string
		for _, e := range A.walkAll(key, "r1", "areas", 100) {
			want = append(want, e.ID)
		}
		require.Len(t, want, 7)
		require.Equal(t, want, ids)
	})

	t.Run("a key revoked through the CLI is refused by every replica", func(t *testing.T) {
		key := a.newKey(grant("r1", "deliveries:read"))
		for _, r := range reps {
			require.Equal(t, http.StatusOK, r.getAs(key, "/v1/restaurants").Status)
		}
		res := a.cli("keys", "revoke", publicID(t, key))
		require.Equal(t, 0, res.Code, res.Stderr)
		for _, r := range reps {
			requireProblem(t, r.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		}
	})

	t.Run("the per-key budget is shared: 300 a minute across all replicas", func(t *testing.T) {
		key := a.newKey(grant("r1", "deliveries:read"))
		for i := range 300 {
			r := rr().getAs(key, "/v1/restaurants")
			require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
			requireRateHeaders(t, r, 300, 299-i)
		}
		for _, r := range reps {
			require429(t, r.getAs(key, "/v1/restaurants"))
		}
	})

	t.Run("the same mutation raced through all replicas applies once", func(t *testing.T) {
		key := a.newKey(grant("r2", "areas:write", "areas:read"))
		body, err := json.Marshal(snapshot("r2", "raced", "m-raced", 1_700_000_000_000, false, area("Cold room")))
		require.NoError(t, err)
		const n = 12
		type result struct {
			status   int
			replayed string
			body     []byte
			err      error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				hr, err := http.NewRequest(http.MethodPut, procs[i%3].URL+ingestPath("r2", "areas", "raced", "m-raced"), bytes.NewReader(body))
				if err != nil {
					results[i].err = err
					return
				}
				hr.Header.Set("Authorization", "Bearer "+key)
				hr.Header.Set("Content-Type", "application/json")
				hr.Header.Set("Idempotency-Key", "m-raced")
				res, err := http.DefaultClient.Do(hr)
				if err != nil {
					results[i].err = err
					return
				}
				defer res.Body.Close()
				b, err := io.ReadAll(res.Body)
				results[i] = result{status: res.StatusCode, replayed: res.Header.Get("Idempotent-Replayed"), body: b, err: err}
			}()
		}
		close(start)
		wg.Wait()
		applied := 0
		for i, r := range results {
			require.NoError(t, r.err, "request %d", i)
			require.Equal(t, http.StatusOK, r.status, "request %d: %s", i, r.body)
			if r.replayed == "" {
				applied++
			}
			require.JSONEq(t, string(results[0].body), string(r.body), "every answer is the one change")
		}
		require.Equal(t, 1, applied)
		walk := C.walkAll(key, "r2", "areas", 100)
		require.Len(t, walk, 1)
		require.Equal(t, "1", walk[0].Sequence)
		var changes int
		require.NoError(t, a.store().Pool().QueryRow(t.Context(),
			`SELECT count(*) FROM record_changes WHERE restaurant_id = 'r2'`).Scan(&changes))
		require.Equal(t, 1, changes)
	})
}
