package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// StreamGroup is a set of restaurants on which a key reads the same
// streams. Most keys read the same streams everywhere: one group.
type StreamGroup struct {
	// Restaurants are sorted bytewise.
	Restaurants []string
	// Streams are collection names and catalog.DeliveryStream, sorted.
	Streams []string
}

// Streams is what a principal reads key-wide: the streams of every
// restaurant (GET /v1/changes), made once per key (KeyRecord.Index) and
// shared by its requests.
type Streams struct {
	// Groups are the principal's restaurants grouped by the streams read
	// there (each collection by its read scope, the deliveries by
	// deliveries:read), in the order of their first restaurant; a
	// restaurant where nothing is read is in none.
	Groups []StreamGroup
	// Fingerprint names Groups: a changes cursor is bound to it, so a
	// cursor outlives any change of grants that leaves the streams read
	// as they were, and no other. It is the fingerprint every earlier
	// release computed for the same grants, so their cursors stay valid:
	// the first 12 bytes, in hex, of the SHA-256 of each restaurant that
	// reads anything, in bytewise order, as "restaurant NUL streams NUL"
	// with its streams sorted and joined by commas.
	Fingerprint string
}

// scopeList names a list of scopes by its backing array: the scope lists
// of a key loaded by the store are shared by every restaurant holding the
// same scopes, so what a list opens is worked out once per distinct list,
// not once per restaurant.
type scopeList struct {
	first *string
	n     int
}

func listOf(scopes []string) scopeList {
	if len(scopes) == 0 {
		return scopeList{}
	}
	return scopeList{&scopes[0], len(scopes)}
}

func streamsOf(grants []Grant) *Streams {
	type opened struct {
		group int
		// suffix is what the fingerprint hashes after the restaurant id.
		suffix []byte
	}
	seen := map[scopeList]opened{}
	byStreams := map[string]int{}
	var groups []StreamGroup
	h := sha256.New()
	var buf []byte
	for _, g := range grants {
		o, ok := seen[listOf(g.Scopes)]
		if !ok {
			o.group = -1
			if streams := readStreams(g.Scopes); len(streams) > 0 {
				key := strings.Join(streams, ",")
				o.suffix = []byte("\x00" + key + "\x00")
				i, ok := byStreams[key]
				if !ok {
					i = len(groups)
					byStreams[key] = i
					groups = append(groups, StreamGroup{Streams: streams})
				}
				o.group = i
			}
			seen[listOf(g.Scopes)] = o
		}
		if o.group < 0 {
			continue
		}
		buf = append(append(buf[:0], g.RestaurantID...), o.suffix...)
		h.Write(buf)
		groups[o.group].Restaurants = append(groups[o.group].Restaurants, g.RestaurantID)
	}
	return &Streams{Groups: groups, Fingerprint: hex.EncodeToString(h.Sum(nil)[:12])}
}

// readStreams are the streams a list of scopes reads, sorted.
func readStreams(scopes []string) []string {
	var out []string
	for _, s := range scopes {
		if s == catalog.DeliveriesRead {
			out = append(out, catalog.DeliveryStream)
		} else if c, ok := readCollection(s); ok {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// readCollection is the collection a scope opens for reading.
func readCollection(scope string) (catalog.Collection, bool) {
	name, ok := strings.CutSuffix(scope, ":read")
	if !ok {
		return catalog.Collection{}, false
	}
	return catalog.Lookup(name)
}

// Reach is what a principal holds on at least one of its restaurants,
// for decisions about the key as a whole (which MCP tools it is shown,
// whether it may open a mobile session), made once per principal.
type Reach struct {
	// Records: the read scope of some collection.
	Records bool
	// Files: the read scope of a collection that carries files.
	Files bool
	// Deliveries: deliveries:read.
	Deliveries bool
	// DeliveryImages: deliveries:read and delivery-images:read on one
	// restaurant (the two scopes a delivery's images need).
	DeliveryImages bool
	// Writes: a write scope (ingest or upload).
	Writes bool
}

func reachOf(grants []Grant) Reach {
	var r Reach
	seen := map[scopeList]bool{}
	for _, g := range grants {
		if seen[listOf(g.Scopes)] {
			continue
		}
		seen[listOf(g.Scopes)] = true
		deliveries, images := false, false
		for _, s := range g.Scopes {
			switch {
			case s == catalog.DeliveriesRead:
				deliveries = true
			case s == catalog.DeliveryImagesRead:
				images = true
			case catalog.IsWriteScope(s):
				r.Writes = true
			}
			if c, ok := readCollection(s); ok {
				r.Records = true
				r.Files = r.Files || c.CarriesFiles
			}
		}
		r.Deliveries = r.Deliveries || deliveries
		r.DeliveryImages = r.DeliveryImages || deliveries && images
	}
	return r
}
