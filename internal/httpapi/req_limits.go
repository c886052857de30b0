package httpapi

import "time"

// mcpDefaultLimit is the page size of MCP tools when the caller gives
// none: smaller than REST's, since every record lands in a model's
// context. The largest is REST's (wire.MaxLimit).
const mcpDefaultLimit = 20

// maxSpanMillis is the longest from..to range: 366 days (spec 4.3).
const maxSpanMillis = 366 * 24 * 60 * 60 * 1000

const (
	// HeaderReprDigest carries the SHA-256 of an upload (RFC 9530).
	HeaderReprDigest = "Repr-Digest"
	// urlLifetime is the validity of signed download URLs (spec 8).
	urlLifetime = 15 * time.Minute
)
