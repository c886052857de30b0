package httpapi

import (
	"net/netip"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/clientip"
)

// client is who sent a request: its address (the connection's peer, or
// behind FOODSAFE_TRUSTED_PROXIES the address they forwarded), for the
// logs and audit_events, and the client that address is one of (its
// prefix, internal/clientip), for everything keyed by client: the per-IP
// budget and audit_counts.
type client struct {
	addr   netip.Addr
	prefix netip.Prefix
}

// clientKey: the request's client (identifyClient).
var clientKey = stateKey[client]{"client"}

// identifyClient works out the request's client once, before anything
// reads it. gin reads X-Forwarded-For as one list made of all its header
// lines (HAProxy's option forwardfor adds a line of its own after the
// client's), from the right.
func (a *API) identifyClient(c *gin.Context) {
	addr, _ := netip.ParseAddr(c.ClientIP())
	addr = addr.Unmap()
	clientKey.set(c, client{addr: addr, prefix: a.cfg.ClientPrefixes().Of(addr)})
	c.Next()
}

// clientAddr is the request's client address ("" when unknown).
func clientAddr(c *gin.Context) string {
	if a := clientKey.value(c).addr; a.IsValid() {
		return a.String()
	}
	return ""
}

// clientBucket names the request's client in a budget: its prefix
// (clientip.Key).
func clientBucket(c *gin.Context) string {
	return clientip.Key(clientKey.value(c).prefix)
}
