// Package schemas embeds the JSON Schemas (draft 2020-12) that define
// request bodies: shared definitions, the delivery, the ingest envelope and
// one schema per collection. They are compiled once at start-up
// (internal/validate) and are also the source of the OpenAPI document.
package schemas

import "embed"

// FS holds every schema file.
//
//go:embed *.json
var FS embed.FS
