package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// The cache's rules without a database (keycache.go): a fill that raced a
// change does not land, nothing is used or kept while the listener is
// not proved, and the size bound holds.
func TestKeyCacheRules(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	rec := &auth.KeyRecord{ID: 1, PublicID: "k1"}

	t.Run("off until the listener listens", func(t *testing.T) {
		var c keyCache
		_, gen, ok := c.get("k1", t0)
		require.False(t, ok)
		c.put("k1", rec, gen)
		c.setLive(true, t0)
		got, _, ok := c.get("k1", t0)
		require.True(t, ok)
		require.Nil(t, got, "a fill made while off was not kept")
	})

	t.Run("a fill that raced a change does not land", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		_, gen, ok := c.get("k1", t0)
		require.True(t, ok)
		c.forget() // a revocation heard while the lookup ran
		c.put("k1", rec, gen)
		got, gen, _ := c.get("k1", t0)
		require.Nil(t, got)
		c.put("k1", rec, gen)
		got, _, _ = c.get("k1", t0)
		require.Same(t, rec, got, "a fill under the current generation lands")
		c.forget()
		got, _, _ = c.get("k1", t0)
		require.Nil(t, got, "a change drops what was held")
	})

	t.Run("not trusted once the listener is silent for the bound", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		_, gen, _ := c.get("k1", t0)
		c.put("k1", rec, gen)
		got, _, ok := c.get("k1", t0.Add(keyMaxSilence-time.Millisecond))
		require.True(t, ok)
		require.Same(t, rec, got)
		_, _, ok = c.get("k1", t0.Add(keyMaxSilence))
		require.False(t, ok)
		c.prove(t0.Add(keyMaxSilence))
		got, _, ok = c.get("k1", t0.Add(keyMaxSilence))
		require.True(t, ok)
		require.Same(t, rec, got, "a ping answered trusts the cache again")
	})

	t.Run("the listener lost: dropped, and a fill begun before does not land after it is back", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		_, gen, _ := c.get("k1", t0)
		c.put("k1", rec, gen)
		_, gen, _ = c.get("k2", t0)
		c.setLive(false, time.Time{})
		_, _, ok := c.get("k1", t0)
		require.False(t, ok)
		c.setLive(true, t0)
		c.put("k2", rec, gen)
		got, _, _ := c.get("k1", t0)
		require.Nil(t, got)
		got, _, _ = c.get("k2", t0)
		require.Nil(t, got)
	})

	t.Run("bounded", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		_, gen, _ := c.get("", t0)
		for i := range keyCacheMax + 10 {
			c.put(strconv.Itoa(i), rec, gen)
		}
		require.Equal(t, keyCacheMax, c.stats(t0).Size)
	})
}
