package auth

import (
	"crypto/sha256"
	"encoding/hex"
)

// GrantsTag names the principal's grants as GET /v1/restaurants lists
// them (every restaurant, its scopes): the strong entity tag of that
// list, so that a client refreshing it sends If-None-Match and is
// answered 304 while nothing changed, however many restaurants the key
// reaches. It is a digest of the list, not a version number, so it
// changes exactly when the list does (a grant given and taken back gives
// the earlier tag again, which is right: the list is the earlier one),
// and it needs nothing stored. Made on first use and kept with the
// principal, which a cached key shares between its requests: a key of
// 20,000 restaurants hashes its list once per change of its grants, not
// per request.
func (p *Principal) GrantsTag() string { return p.tag() }

// grantsTagOf digests grants, restaurants and scopes sorted: each
// restaurant as "restaurant NUL scope NUL scope ... NUL NUL". A scope
// list shared by many restaurants (as the store loads them) is encoded
// once.
func grantsTagOf(grants []Grant) string {
	h := sha256.New()
	encoded := map[scopeList][]byte{}
	var buf []byte
	for _, g := range grants {
		suffix, ok := encoded[listOf(g.Scopes)]
		if !ok || len(g.Scopes) == 0 {
			suffix = []byte{0}
			for _, s := range g.Scopes {
				suffix = append(append(suffix, s...), 0)
			}
			suffix = append(suffix, 0)
			encoded[listOf(g.Scopes)] = suffix
		}
		buf = append(append(buf[:0], g.RestaurantID...), suffix...)
		h.Write(buf)
	}
	return "g" + hex.EncodeToString(h.Sum(nil)[:16])
}
