package clientip

import (
	"net/netip"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p        Prefixes
		addr     string
		want     string
		wantKeys string
	}{
		{Default, "203.0.113.5", "203.0.113.5/32", "203.0.113.5"},
		{Default, "::ffff:203.0.113.5", "203.0.113.5/32", "203.0.113.5"},
		{Default, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{Default, "2001:db8:1:2::1", "2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{Default, "fe80::1%eth0", "fe80::/64", "fe80::/64"},
		{Prefixes{IPv4: 24, IPv6: 48}, "203.0.113.5", "203.0.113.0/24", "203.0.113.0/24"},
		{Prefixes{IPv4: 24, IPv6: 48}, "2001:db8:1:2::1", "2001:db8:1::/48", "2001:db8:1::/48"},
		{Prefixes{IPv4: 32, IPv6: 128}, "2001:db8::1", "2001:db8::1/128", "2001:db8::1"},
	} {
		got := tc.p.Of(netip.MustParseAddr(tc.addr))
		if got.String() != tc.want || Key(got) != tc.wantKeys {
			t.Errorf("%+v.Of(%s) = %s (key %s), want %s (key %s)", tc.p, tc.addr, got, Key(got), tc.want, tc.wantKeys)
		}
	}
	if Default.Of(netip.Addr{}).IsValid() {
		t.Error("an invalid address is no client")
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for p, ok := range map[Prefixes]bool{Default: true, {8, 16}: true, {32, 128}: true, {7, 64}: false, {33, 64}: false,
		{32, 15}: false, {32, 129}: false} {
		if err := p.Check(); (err == nil) != ok {
			t.Errorf("%+v.Check() = %v", p, err)
		}
	}
}
