package httpapi

import "time"

// The limits below are read by the operations that enforce them and by the
// prose (resp_prose.go) and tools that state them, so they sit under both.

// mcpDefaultLimit is the page size of MCP tools when the caller gives
// none: smaller than REST's, since every record lands in a model's
// context. The largest is REST's (wire.MaxLimit).
const mcpDefaultLimit = 20

// maxSpanMillis is the longest from..to range: 366 days (spec 4.3).
const maxSpanMillis = 366 * 24 * 60 * 60 * 1000

// urlLifetime is the validity of signed download URLs (spec 8).
const urlLifetime = 15 * time.Minute
