package server

import (
	"net"
	"net/netip"
	"sync"
)

// shares counts the connections each client holds open, and refuses one
// beyond a client's share of the server's connections: without it, one
// address can open them all (idle keep-alives cost it nothing) and every
// other client's new connection is refused. A client is an address
// prefix (an IPv4 address, an IPv6 /64: Options.Client), so an IPv6
// client cannot take a share per address. The map holds only clients
// with a connection open: at most the server's cap.
type shares struct {
	max    int
	client func(netip.Addr) (netip.Prefix, bool)

	mu   sync.Mutex
	open map[netip.Prefix]int
}

// newShares is nil (no share) when max is 0 or no client function is
// given.
func newShares(max int, client func(netip.Addr) (netip.Prefix, bool)) *shares {
	if max <= 0 || client == nil {
		return nil
	}
	return &shares{max: max, client: client, open: make(map[netip.Prefix]int)}
}

// take counts a new connection from peer against its client's share: the
// client it holds a place of (the invalid prefix when it holds none), or
// ok false when the share is full.
func (s *shares) take(peer net.Addr) (netip.Prefix, bool) {
	if s == nil {
		return netip.Prefix{}, true
	}
	tcp, isTCP := peer.(*net.TCPAddr)
	if !isTCP {
		return netip.Prefix{}, true
	}
	client, shared := s.client(tcp.AddrPort().Addr())
	if !shared || !client.IsValid() {
		return netip.Prefix{}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client] >= s.max {
		return netip.Prefix{}, false
	}
	s.open[client]++
	return client, true
}

// release gives back a place taken by take.
func (s *shares) release(client netip.Prefix) {
	if s == nil || !client.IsValid() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client] <= 1 {
		delete(s.open, client)
		return
	}
	s.open[client]--
}
