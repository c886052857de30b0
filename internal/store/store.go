// Package store is the only door to PostgreSQL. It owns the connection pool,
// runs the sqlc-generated queries of internal/db and the hand-written scans
// and pipelines of internal/pgrows on the same statements (no other package
// imports either) and converts rows into the domain types the HTTP layer
// serialises.
package store

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// Store wraps the pool and the generated queries.
type Store struct {
	pool *pgxpool.Pool
	q    *db.Queries
	// citus is whether the database has the citus extension, which picks
	// ingest's statements (applyChange): 0 not known yet, 1 no, 2 yes.
	citus atomic.Int32
	// keys caches key lookups while StartKeyCache's listener runs.
	keys keyCache
	// unknown remembers public ids that named no key (unknownkeys.go).
	unknown unknownKeys
	// wide remembers streams whose walk pages need the byte sum
	// (widestreams.go).
	wide wideStreams
}

// PlannerSettings are set on every connection the service opens (as
// startup parameters, so they hold from the first statement). Every
// statement the service runs on a request path is a lookup or a keyset
// range designed around one index, read in index order and stopped by
// LIMIT. Left to its cost model, a planner without statistics (a table
// never analyzed: a fresh deployment before autovacuum's first pass, any
// server with autovacuum off) estimates a two-sided range on unknown
// bounds at a few rows and reads it with a bitmap scan and a Sort — at
// 1,000,000 deliveries, a restaurant's entire window sorted for a 50-row
// page — and costs a small never-analyzed table's sequential scan below
// its index. A generic plan made then stays cached on the connection
// however much the table grows. With both off, the planner takes an index
// whenever one matches, which for these statements is the plan they were
// written for, whatever the statistics say (TestHotPathPlans, at 0 to
// 1,000,000 rows, analyzed or not). Statements with no usable index (the
// admin listings) still run, as the sequential scans they are. Ad-hoc
// sessions of DBAs are unaffected.
//
// jit is off too: with both scans off, a statement that must scan (the
// schema version, the admin listings) is costed at 1e10 and above, past
// every JIT threshold, and PostgreSQL would compile it with inlining on
// every call (about 130 ms of JIT for a one-row table); no statement of
// the service reads enough rows for JIT to pay.
var PlannerSettings = map[string]string{"enable_seqscan": "off", "enable_bitmapscan": "off", "jit": "off"}

// Open creates a pool for url. The pool connects lazily, so a database that
// is down at start-up surfaces through /health/ready rather than a crash.
// Pool sizing comes from the URL (pool_max_conns=...), pgx's defaults
// otherwise; pgx's prepared-statement cache stays on. A tracer, when
// given (tracing on), sees every statement, pipeline and pool acquire.
func Open(ctx context.Context, url string, tracer ...pgx.QueryTracer) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	for _, t := range tracer {
		if t != nil {
			cfg.ConnConfig.Tracer = t
		}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "foodsafe"
	for k, v := range PlannerSettings {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
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

// Pool exposes the pool to tests that arrange or inspect rows with SQL of
// their own; the service itself reaches PostgreSQL only through Store's
// methods.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// PoolSize is the most connections the pool opens.
func (s *Store) PoolSize() int { return int(s.pool.Config().MaxConns) }

// Close releases every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	return translate(s.pool.Ping(ctx))
}

// SchemaVersion reports the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	v, err := s.q.SchemaVersion(ctx)
	return v, translate(err)
}

// inTx runs f in a transaction, committed when f returns nil and rolled
// back otherwise; the error is translated (see translate).
func (s *Store) inTx(ctx context.Context, f func(q *db.Queries) error) error {
	return s.inTxConn(ctx, func(_ pgx.Tx, q *db.Queries) error { return f(q) })
}

// inTxReadCommitted is inTx at READ COMMITTED whatever the server's
// default_transaction_isolation: the key commands rebuild the key's
// key_grant_sets last in their transaction (migration 00043), which is
// right only when that statement reads the grants as they are after it
// waited for a concurrent change of them, not as of the transaction's
// first statement (at another level the rebuild only deletes the summary,
// and every change of key_grants is refused).
func (s *Store) inTxReadCommitted(ctx context.Context, f func(q *db.Queries) error) error {
	return translate(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted},
		func(tx pgx.Tx) error { return f(s.q.WithTx(tx)) }))
}

// inTxConn is inTx for work that also runs the hand-written statements of
// pgrows, which take the transaction itself.
func (s *Store) inTxConn(ctx context.Context, f func(tx pgx.Tx, q *db.Queries) error) error {
	return translate(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return f(tx, s.q.WithTx(tx)) }))
}
