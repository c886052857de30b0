package store

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// The cache's rules without a database (keycache.go): a fill that raced a
// change of its key does not land, a change of another key leaves it
// alone, nothing is used or kept while the listener is not proved, and
// the size bound holds.
func TestKeyCacheRules(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	// Public ids as the triggers send them.
	const k1, k2, k3 = "keyone000001", "keytwo000002", "keythree0003"
	rec := &auth.KeyRecord{ID: 1, PublicID: k1}
	// fill runs one lookup of publicID from begin to end, with heard
	// happening while it reads the database.
	fill := func(c *keyCache, publicID string, heard func()) {
		f := c.begin(publicID)
		heard()
		c.end(publicID, f, rec)
	}
	nothing := func() {}

	t.Run("off until the listener listens", func(t *testing.T) {
		var c keyCache
		_, ok := c.get(k1, t0)
		require.False(t, ok)
		fill(&c, k1, nothing)
		c.setLive(true, t0)
		got, ok := c.get(k1, t0)
		require.True(t, ok)
		require.Nil(t, got, "a fill made while off was not kept")
	})

	t.Run("a fill that raced a change of its key does not land", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		fill(&c, k1, func() { c.heard(k1) }) // a revocation heard while the lookup ran
		got, _ := c.get(k1, t0)
		require.Nil(t, got)
		fill(&c, k1, nothing)
		got, _ = c.get(k1, t0)
		require.Same(t, rec, got, "a fill begun after the change lands")
		c.heard(k1)
		got, _ = c.get(k1, t0)
		require.Nil(t, got, "a change drops what was held")
	})

	t.Run("a change of another key changes nothing", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		fill(&c, k1, nothing)
		fill(&c, k2, func() { c.heard(k3) })
		c.heard(k3)
		got, _ := c.get(k1, t0)
		require.Same(t, rec, got)
		got, _ = c.get(k2, t0)
		require.Same(t, rec, got, "a fill that raced another key's change lands")
		require.Equal(t, uint64(2), c.stats(t0).Changes)
		require.Zero(t, c.stats(t0).Unreadable)
	})

	t.Run("every key: '*', and a payload no key is named by", func(t *testing.T) {
		for _, payload := range []string{keyAll, "", "key " + k1, "K1-not-an-id", k1 + "," + k2, "short"} {
			var c keyCache
			c.setLive(true, t0)
			fill(&c, k1, nothing)
			fill(&c, k2, func() { c.heard(payload) })
			got, _ := c.get(k1, t0)
			require.Nil(t, got, "payload %q", payload)
			got, _ = c.get(k2, t0)
			require.Nil(t, got, "payload %q: a fill that raced it does not land", payload)
			unreadable := uint64(1)
			if payload == keyAll {
				unreadable = 0
			}
			require.Equal(t, unreadable, c.stats(t0).Unreadable, "payload %q", payload)
		}
	})

	t.Run("not trusted once the listener is silent for the bound", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		fill(&c, k1, nothing)
		got, ok := c.get(k1, t0.Add(keyMaxSilence-time.Millisecond))
		require.True(t, ok)
		require.Same(t, rec, got)
		_, ok = c.get(k1, t0.Add(keyMaxSilence))
		require.False(t, ok)
		c.prove(t0.Add(keyMaxSilence))
		got, ok = c.get(k1, t0.Add(keyMaxSilence))
		require.True(t, ok)
		require.Same(t, rec, got, "a ping answered trusts the cache again")
	})

	t.Run("the listener lost: dropped, and a fill begun before does not land after it is back", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		fill(&c, k1, nothing)
		fill(&c, k2, func() {
			c.setLive(false, time.Time{})
			_, ok := c.get(k1, t0)
			require.False(t, ok)
			c.setLive(true, t0)
		})
		got, _ := c.get(k1, t0)
		require.Nil(t, got)
		got, _ = c.get(k2, t0)
		require.Nil(t, got)
	})

	t.Run("no key is not cached", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		f := c.begin(k1)
		c.end(k1, f, nil)
		require.Zero(t, c.stats(t0).Size)
	})

	t.Run("bounded", func(t *testing.T) {
		var c keyCache
		c.setLive(true, t0)
		for i := range keyCacheMax + 10 {
			fill(&c, strconv.Itoa(i), nothing)
		}
		require.Equal(t, keyCacheMax, c.stats(t0).Size)
	})
}
