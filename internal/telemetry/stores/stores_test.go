package stores

import (
	"context"
	"testing"
)

// A statement's span is named by its sqlc name, a statement outside sqlc
// (a transaction's bounds) by its first word.
func TestSQLName(t *testing.T) {
	for sql, want := range map[string]string{
		"-- name: RecordWalkPage :many\nSELECT 1":        "RecordWalkPage",
		"-- name: KeyAuthLookup :one\n-- more\nSELECT 1": "KeyAuthLookup",
		"begin":                           "BEGIN",
		"  SELECT pg_advisory_unlock($1)": "SELECT",
		"-- name:  :one\nSELECT 1":        "SELECT",
	} {
		if got := sqlName(context.Background(), sql); got != want {
			t.Errorf("sqlName(%q) = %q, want %q", sql, got, want)
		}
	}
}
