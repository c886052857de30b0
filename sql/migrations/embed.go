// Package migrations embeds the goose migrations so the binary carries its
// own schema. sqlc reads the same files (sqlc.yaml), so the typed queries
// are always compiled against the schema that `foodsafe migrate` applies.
package migrations

import "embed"

// FS holds every numbered migration.
//
//go:embed *.sql
var FS embed.FS
