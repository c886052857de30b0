// Package clientip decides which addresses are one client. An IPv4
// address is one subscriber's at most, while an IPv6 subscriber is handed
// a whole /64 (or a /56, /48) and may use any address in it, a new one
// per request if it likes: a budget, a connection share or an audit row
// per IPv6 address would be one per request. Everything keyed by the
// client's address (its rate-limit budget, its share of the connections,
// its audit_counts rows) keys on the client's prefix instead: by default
// the /32 of an IPv4 address and the /64 of an IPv6 one.
package clientip

import (
	"fmt"
	"net/netip"
)

// Prefixes are the prefix lengths that make one client, per family.
type Prefixes struct {
	IPv4, IPv6 int
}

// Default is one IPv4 address and one IPv6 /64 a client.
var Default = Prefixes{IPv4: 32, IPv6: 64}

// Check refuses lengths no client has: shorter than a /8 of IPv4 or a
// /16 of IPv6 would put whole networks of unrelated clients under one
// budget.
func (p Prefixes) Check() error {
	if p.IPv4 < 8 || p.IPv4 > 32 {
		return fmt.Errorf("an IPv4 client prefix must be 8 to 32 bits, got %d", p.IPv4)
	}
	if p.IPv6 < 16 || p.IPv6 > 128 {
		return fmt.Errorf("an IPv6 client prefix must be 16 to 128 bits, got %d", p.IPv6)
	}
	return nil
}

// Of is the client a is one address of: its prefix of the family's
// length. An IPv4 address written as IPv6 (::ffff:192.0.2.1) is IPv4. An
// invalid address is the invalid prefix.
func (p Prefixes) Of(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := p.IPv6
	if a.Is4() {
		bits = p.IPv4
	}
	pre, _ := a.Prefix(bits)
	return pre
}

// Key is the client as a bucket name: the address alone when the prefix
// is one address (203.0.113.5, as before prefixes), else the prefix
// (2001:db8:1:2::/64).
func Key(c netip.Prefix) string {
	if c.IsSingleIP() {
		return c.Addr().String()
	}
	return c.String()
}
