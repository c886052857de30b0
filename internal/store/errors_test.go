package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// Every way the driver reports a lost database is a 503; a foreign key or
// a missing row is the one 404; anything else stays an internal error.
func TestTranslate(t *testing.T) {
	t.Parallel()
	wrapped := func(err error) error { return fmt.Errorf("failed to receive message: %w", err) }
	for name, tc := range map[string]struct {
		err  error
		want apperr.Code
	}{
		"no rows":                {pgx.ErrNoRows, apperr.NotFound},
		"foreign key":            {&pgconn.PgError{Code: "23503"}, apperr.NotFound},
		"admin shutdown":         {&pgconn.PgError{Code: "57P01"}, apperr.DependencyUnavailable},
		"crash shutdown":         {&pgconn.PgError{Code: "57P02"}, apperr.DependencyUnavailable},
		"cannot connect now":     {&pgconn.PgError{Code: "57P03"}, apperr.DependencyUnavailable},
		"connection failure":     {&pgconn.PgError{Code: "08006"}, apperr.DependencyUnavailable},
		"too many connections":   {&pgconn.PgError{Code: "53300"}, apperr.DependencyUnavailable},
		"connection reset":       {wrapped(&net.OpError{Op: "read", Err: syscall.ECONNRESET}), apperr.DependencyUnavailable},
		"bare reset":             {wrapped(syscall.ECONNRESET), apperr.DependencyUnavailable},
		"broken pipe":            {wrapped(syscall.EPIPE), apperr.DependencyUnavailable},
		"unexpected EOF":         {wrapped(io.ErrUnexpectedEOF), apperr.DependencyUnavailable},
		"EOF":                    {wrapped(io.EOF), apperr.DependencyUnavailable},
		"conn closed":            {wrapped(pgconn.ErrConnClosed), apperr.DependencyUnavailable},
		"conn closed, unwrapped": {errors.New("conn closed"), apperr.DependencyUnavailable},
		"pool closed":            {puddle.ErrClosedPool, apperr.DependencyUnavailable},
		"our own deadline":       {wrapped(context.DeadlineExceeded), apperr.DependencyUnavailable},
		"a schema change under a cached statement": {&pgconn.PgError{Code: "0A000", Message: "cached plan must not change result type"},
			apperr.DependencyUnavailable},
	} {
		t.Run(name, func(t *testing.T) {
			got := translate(tc.err)
			if !apperr.Is(got, tc.want) {
				t.Fatalf("translate(%v) = %v, want code %s", tc.err, got, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("translate(%v) lost its cause", tc.err)
			}
		})
	}
	for name, err := range map[string]error{
		"a bug":                       errors.New("some bug"),
		"unique violation":            &pgconn.PgError{Code: "23505"},
		"syntax error":                &pgconn.PgError{Code: "42601"},
		"another unsupported feature": &pgconn.PgError{Code: "0A000", Message: "cannot use subquery in index predicate"},
	} {
		if _, ok := apperr.As(translate(err)); ok {
			t.Errorf("%s: translate(%v) = %v, want it left as an internal error", name, err, translate(err))
		}
	}
	if translate(nil) != nil {
		t.Error("translate(nil) must be nil")
	}
}
