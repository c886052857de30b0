package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// streamsBefore is how GET /v1/changes grouped a principal's streams and
// fingerprinted them before the principal made them once per key: the
// function as it was, on every page, over a sorted copy of the grants.
// Changes cursors in partners' hands are bound to its fingerprint.
func streamsBefore(grants []Grant) ([]StreamGroup, string) {
	m := map[string][]string{}
	for _, g := range grants {
		m[g.RestaurantID] = append(m[g.RestaurantID], g.Scopes...)
	}
	var sorted []Grant
	for r, s := range m {
		sort.Strings(s)
		sorted = append(sorted, Grant{RestaurantID: r, Scopes: slices.Compact(s)})
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].RestaurantID < sorted[j].RestaurantID })
	slices.SortFunc(sorted, func(a, b Grant) int { return strings.Compare(a.RestaurantID, b.RestaurantID) })
	byStreams := map[string]int{}
	var groups []StreamGroup
	h := sha256.New()
	for _, g := range sorted {
		var streams []string
		if slices.Contains(g.Scopes, catalog.DeliveriesRead) {
			streams = append(streams, "deliveries")
		}
		for _, c := range catalog.Collections {
			if slices.Contains(g.Scopes, c.ReadScope()) {
				streams = append(streams, c.Name)
			}
		}
		if len(streams) == 0 {
			continue
		}
		slices.Sort(streams)
		key := strings.Join(streams, ",")
		h.Write([]byte(g.RestaurantID + "\x00" + key + "\x00"))
		i, ok := byStreams[key]
		if !ok {
			i = len(groups)
			byStreams[key] = i
			groups = append(groups, StreamGroup{Streams: streams})
		}
		groups[i].Restaurants = append(groups[i].Restaurants, g.RestaurantID)
	}
	return groups, hex.EncodeToString(h.Sum(nil)[:12])
}

// randomGrants draws grants the way keys are really shaped and a few ways
// they are not: many restaurants sharing one scope list (as the store
// loads them), restaurants split over several grants, duplicate and
// unsorted scopes, write-only restaurants, ids that sort differently
// bytewise and by locale.
func randomGrants(rng *rand.Rand) []Grant {
	scopes := catalog.Scopes()
	shared := [][]string{}
	for range 1 + rng.IntN(3) {
		var s []string
		for _, sc := range scopes {
			if rng.IntN(3) == 0 {
				s = append(s, sc)
			}
		}
		shared = append(shared, s)
	}
	ids := []string{"a", "B", "b", "r-1", "r.1", "r_1", "r1", "R1", "r10", "r2", "z:9", "0"}
	var grants []Grant
	for i := range 1 + rng.IntN(40) {
		id := ids[rng.IntN(len(ids))]
		if rng.IntN(2) == 0 {
			id = fmt.Sprintf("r%04d", i)
		}
		var s []string
		switch rng.IntN(4) {
		case 0, 1:
			s = shared[rng.IntN(len(shared))]
		case 2:
			for range rng.IntN(6) {
				s = append(s, scopes[rng.IntN(len(scopes))])
			}
		case 3:
			s = []string{"areas:write", "deliveries:write"}
		}
		grants = append(grants, Grant{RestaurantID: id, Scopes: s})
	}
	return grants
}

// The streams a principal reads, grouped, and their fingerprint are
// exactly what the listing computed before they were made once per key,
// so every changes cursor issued before stays valid.
func TestStreamsAsBefore(t *testing.T) {
	full := []string{}
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			full = append(full, s)
		}
	}
	t.Run("the fingerprint of a known key is the one cursors already carry", func(t *testing.T) {
		// The listing's fingerprint of these grants before this change
		// (readableStreams at the time, run on them): a change of both the
		// code and the function above would still change what partners hold.
		grants := []Grant{{RestaurantID: "r1", Scopes: []string{"areas:read", "deliveries:read"}},
			{RestaurantID: "r2", Scopes: []string{"areas:read", "deliveries:read"}},
			{RestaurantID: "r3", Scopes: []string{"cooling:read", "areas:write"}}}
		_, before := streamsBefore(grants)
		s := NewPrincipal(1, "k", grants).Streams()
		require.Equal(t, before, s.Fingerprint)
		require.Equal(t, "90eef33619044aac04e41094", s.Fingerprint)
		require.Equal(t, []StreamGroup{{Restaurants: []string{"r1", "r2"}, Streams: []string{"areas", "deliveries"}},
			{Restaurants: []string{"r3"}, Streams: []string{"cooling"}}}, s.Groups)
	})
	t.Run("random keys", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(43, 1))
		for i := range 2000 {
			grants := randomGrants(rng)
			wantGroups, want := streamsBefore(grants)
			s := NewPrincipal(1, "k", grants).Streams()
			require.Equal(t, want, s.Fingerprint, "case %d: %v", i, grants)
			require.Equal(t, wantGroups, s.Groups, "case %d: %v", i, grants)
		}
	})
	t.Run("a key of 20,000 restaurants", func(t *testing.T) {
		grants := make([]Grant, 20_000)
		for i := range grants {
			grants[i] = Grant{RestaurantID: fmt.Sprintf("r%05d", 20_000-i), Scopes: full}
		}
		groups, want := streamsBefore(grants)
		s := NewPrincipal(1, "k", grants).Streams()
		require.Equal(t, want, s.Fingerprint)
		require.Equal(t, groups, s.Groups)
		require.Len(t, s.Groups, 1)
		require.Len(t, s.Groups[0].Streams, 25)
	})
	t.Run("no grants", func(t *testing.T) {
		groups, want := streamsBefore(nil)
		s := NewPrincipal(1, "k", nil).Streams()
		require.Equal(t, want, s.Fingerprint)
		require.Equal(t, groups, s.Groups)
	})
}

// What a key holds anywhere is what scanning all its grants said.
func TestReachAsScanningGrants(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 2))
	for i := range 2000 {
		grants := randomGrants(rng)
		var want Reach
		for _, g := range NewPrincipal(1, "k", grants).Grants() {
			if slices.Contains(g.Scopes, catalog.DeliveriesRead) {
				want.Deliveries = true
				if slices.Contains(g.Scopes, catalog.DeliveryImagesRead) {
					want.DeliveryImages = true
				}
			}
			for _, c := range catalog.Collections {
				if slices.Contains(g.Scopes, c.ReadScope()) {
					want.Records = true
					want.Files = want.Files || c.CarriesFiles
				}
			}
			want.Writes = want.Writes || slices.ContainsFunc(g.Scopes, catalog.IsWriteScope)
		}
		require.Equal(t, want, NewPrincipal(1, "k", grants).Reach(), "case %d: %v", i, grants)
	}
}

// What Index costs once per key, for a key of 20,000 restaurants holding
// 25 read scopes each as the store loads it (one shared scope list), and
// with a list of its own per restaurant.
func BenchmarkIndexLargeKey(b *testing.B) {
	var scopes []string
	for _, s := range catalog.Scopes() {
		if strings.HasSuffix(s, ":read") && s != catalog.DeliveryImagesRead {
			scopes = append(scopes, s)
		}
	}
	for _, shared := range []bool{true, false} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) {
			grants := make([]Grant, 20_000)
			for i := range grants {
				s := scopes
				if !shared {
					s = slices.Clone(scopes)
				}
				grants[i] = Grant{RestaurantID: fmt.Sprintf("r%05d", i), Scopes: s}
			}
			for b.Loop() {
				k := &KeyRecord{ID: 1, PublicID: "k", Grants: grants}
				k.Index()
			}
		})
	}
}
