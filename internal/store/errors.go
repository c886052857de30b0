package store

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// unavailableDetail is what a client hears when the database cannot serve
// it right now.
const unavailableDetail = "The database is briefly unavailable; retry with backoff."

// translate is the one place where database errors become the service's
// error vocabulary. Every store method passes its query errors through it,
// so no caller above the store inspects a driver error:
//
//   - pgx.ErrNoRows is apperr.ErrNotFound ("no such row"; a write whose
//     ON CONFLICT DO NOTHING returned nothing checks for it with
//     apperr.Is(err, apperr.NotFound));
//   - a foreign-key violation is the one 404 too: every foreign key of the
//     schema points at the parent a request names in its path;
//   - any loss of the database (refused, reset, closed, timed out, shut
//     down, overloaded, pool closed) is dependency-unavailable, which
//     clients retry;
//   - so is a statement whose cached plan no longer matches the schema
//     (a migration changed a column's type under a running server:
//     jsonb to json in 00013 and 00019, online or not): pgx forgets the
//     statement on that error and prepares it again on the next call, so
//     the retry succeeds;
//   - anything else is returned as it is and becomes an opaque 500.
//
// The original error is kept as the cause, for the log line of the request.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return apperr.ErrNotFound.WithCause(err)
	}
	if _, ok := apperr.As(err); ok {
		return err // already translated (e.g. returned from inside a transaction)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23503": // foreign_key_violation
			return apperr.ErrNotFound.WithCause(err)
		case unavailableState(pe.Code), stalePlan(pe):
			return unavailable(err)
		}
		return err
	}
	if lostConnection(err) {
		return unavailable(err)
	}
	return err
}

// mutationTaken turns RecordApplyChange's unique violation of the mutation
// id into the pgx.ErrNoRows the Citus statements answer with: the id was
// taken by a request that committed first. It runs before translate, which
// would make a unique violation an opaque 500; only this constraint means
// "taken", any other violation stays what it is.
func mutationTaken(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "record_changes_pkey" { // unique_violation
		return pgx.ErrNoRows
	}
	return err
}

func unavailable(err error) error {
	return apperr.New(apperr.DependencyUnavailable, unavailableDetail).WithCause(err)
}

// unavailableState lists the SQLSTATEs that mean "not now" rather than "no":
// connection exceptions, operator intervention (admin or crash shutdown,
// cannot connect now) and insufficient resources (too many connections,
// out of memory, disk full).
func unavailableState(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "53")
}

// stalePlan is PostgreSQL refusing a prepared statement whose result
// type a schema change altered since it was prepared (SQLSTATE 0A000,
// feature_not_supported, which otherwise means a bug of ours).
func stalePlan(pe *pgconn.PgError) bool {
	return pe.Code == "0A000" && strings.Contains(pe.Message, "cached plan must not change result type")
}

// lostConnection recognises a connection that failed or went away under a
// query, in whatever form the driver reports it: a failed connect, a
// timeout, a socket error, EOF mid-message, a connection pgx already
// closed, or a pool closed during shutdown. None of these is a bug; all of
// them are worth a retry.
func lostConnection(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ce), pgconn.Timeout(err), errors.As(err, &ne), errors.As(err, &oe):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, puddle.ErrClosedPool):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline of our own (e.g. the readiness probe's), not a client
		// hanging up (that is context.Canceled, answered as 499).
		return true
	}
	// Errors pgx formats without a wrapped cause.
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "closed pool")
}

// found separates "no row" from failure for queries where an absent row is
// an answer, not an error (an INSERT ... ON CONFLICT DO NOTHING that
// returned nothing; a lookup before a write): (true, nil) for a row,
// (false, nil) for none, (false, err) for anything else, translated.
func found(err error) (bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, translate(err)
}
