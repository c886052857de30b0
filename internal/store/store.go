// Package store is the only door to PostgreSQL. It owns the connection pool,
// runs the sqlc-generated queries of internal/db (no other package imports
// them) and converts rows into the domain types the HTTP layer serialises.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/foodsafe/foodsafe/internal/db"
)

// Store wraps the pool and the generated queries.
type Store struct {
	pool *pgxpool.Pool
	q    *db.Queries
}

// Open creates a pool for url. The pool connects lazily, so a database that
// is down at start-up surfaces through /health/ready rather than a crash.
// Pool sizing comes from the URL (pool_max_conns=...), pgx's defaults
// otherwise; pgx's prepared-statement cache stays on.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "foodsafe"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	return New(pool), nil
}

// New wraps an existing pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: db.New(pool)}
}

// Pool exposes the pool to wiring code (migrations, audit COPY, LISTEN).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close releases every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}

// SchemaVersion reports the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	return s.q.SchemaVersion(ctx)
}

// isNoRows reports pgx's "no rows in result set".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// Unavailable reports errors that mean the database could not be reached
// or refused work for now (connection failures, timeouts, shutdown, too
// many connections), as opposed to bugs: clients should retry those.
func Unavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // admin/crash shutdown, cannot connect now
			pe.Code == "53300": // too many connections
			return true
		}
	}
	return false
}
