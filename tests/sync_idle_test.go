package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// wireCounter is a TCP proxy in front of the service that counts the
// bytes crossing it both ways: what a client's requests cost on the wire,
// compression and headers included.
type wireCounter struct {
	ln    net.Listener
	bytes atomic.Int64
	wg    sync.WaitGroup
}

func newWireCounter(t testing.TB, upstream string) *wireCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	w := &wireCounter{ln: ln}
	t.Cleanup(func() { _ = ln.Close(); w.wg.Wait() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = in.Close()
				continue
			}
			w.wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer w.wg.Done()
				n, _ := io.Copy(dst, src)
				w.bytes.Add(n)
				_ = dst.Close()
				_ = src.Close()
			}
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	return w
}

// url is the proxy's address as a base URL.
func (w *wireCounter) url() string { return "http://" + w.ln.Addr().String() }

// settled is the bytes counted once every connection the client opened
// is closed (the client has exited).
func (w *wireCounter) settled() int64 {
	deadline := time.Now().Add(5 * time.Second)
	last := w.bytes.Load()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := w.bytes.Load(); n == last {
			return n
		}
		last = w.bytes.Load()
	}
	return last
}

// An idle refresh costs its bytes, not the key's: with a key of 2,000
// restaurants × 25 scopes (a restaurant list of about 1.1 MB, 16 KB
// gzipped), a refresh in which nothing changed is 2 requests and a few
// kilobytes on the wire (the list is revalidated with If-None-Match and
// answered 304; the plan is the one the target keeps). A grant given
// makes the next refresh read the list again and mirror the restaurant
// it gained; the refresh after it is idle again.
func TestSyncIdleRefreshCostsItsBytes(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	const n = 2000
	reads := []string{catalog.DeliveriesRead}
	for _, c := range catalog.Collections {
		reads = append(reads, c.ReadScope())
	}
	restaurants := make([]string, n+1)
	var grants []auth.Grant
	for i := range restaurants {
		restaurants[i] = fmt.Sprintf("r%04d", i)
		if i < n {
			grants = append(grants, grant(restaurants[i], reads...))
		}
	}
	a.addRestaurants(restaurants...)
	key := a.newKey(grants...)
	now := time.Now()
	scaleIngest(t, a.store(), "r0007", "areas", "rec-1", "m-1", now)

	proxy := newWireCounter(t, a.srv.Listener.Addr().String())
	target := sqliteTarget(t)
	sync := func(what string) (syncEvent, int64) {
		t.Helper()
		before := proxy.settled()
		r := runSync(t, key, "--api", proxy.url(), "--to", target, "--json")
		require.Equal(t, 0, r.Code, "%s: stderr:\n%s", what, r.Stderr)
		sum := r.summary(t)
		bytes := proxy.settled() - before
		t.Logf("%-32s %d requests, %d bytes on the wire, %d body bytes", what, sum.Requests, bytes, sum.BodyBytes)
		return sum, bytes
	}
	first, firstBytes := sync("first sync")
	require.Greater(t, firstBytes, int64(10_000), "the first sync reads the whole list")
	require.Equal(t, n, first.Restaurants)

	for i := range 2 {
		idle, bytes := sync(fmt.Sprintf("idle refresh %d", i+1))
		require.LessOrEqual(t, idle.Requests, int64(2))
		require.Less(t, bytes, int64(4_000), "an idle refresh's bytes do not grow with the restaurants")
		require.Equal(t, n, idle.Restaurants, "planned from the kept list")
	}

	// A grant given: the list is read again and the new restaurant synced.
	scaleIngest(t, a.store(), restaurants[n], "areas", "rec-1", "m-new", now)
	require.NoError(t, a.store().KeyGrant(context.Background(), publicID(t, key), []auth.Grant{grant(restaurants[n], "areas:read")}))
	changed, bytes := sync("refresh after a grant")
	require.Greater(t, bytes, int64(10_000), "the list changed: it is read whole")
	require.Equal(t, n+1, changed.Restaurants)
	requireMirrorEqual(t, a, target, restaurants[n], targets.TombstoneMark, "areas")
	requireMirrorEqual(t, a, target, "r0007", targets.TombstoneMark, "areas")

	idle, bytes := sync("idle refresh after the grant")
	require.LessOrEqual(t, idle.Requests, int64(2))
	require.Less(t, bytes, int64(4_000))
	require.Equal(t, n+1, idle.Restaurants)
}
