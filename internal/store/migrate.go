package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/foodsafe/foodsafe/sql/migrations"
)

// Migrate applies every pending migration to the database at url and
// returns the resulting schema version. A session advisory lock serialises
// concurrent migrators (several servers starting at once).
func Migrate(ctx context.Context, url string) (int64, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return 0, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	return migrateDB(ctx, sqlDB)
}

func migrateDB(ctx context.Context, sqlDB *sql.DB) (int64, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS,
		goose.WithSessionLocker(locker))
	if err != nil {
		return 0, fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("apply migrations: %w", err)
	}
	return p.GetDBVersion(ctx)
}

// LatestMigration is the version the embedded migrations lead to.
func LatestMigration() (int64, error) {
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, f := range files {
		v, err := goose.NumericComponent(f)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", f, err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// CreateDatabase creates the database named in url when it does not exist,
// connecting to the server's "postgres" database to do so. It is what lets
// `make run` work on a fresh machine.
func CreateDatabase(ctx context.Context, dsn string) (created bool, err error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := cfg.Database
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return false, conn.Close(ctx)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "3D000" { // invalid_catalog_name
		return false, fmt.Errorf("connect: %w", err)
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	conn, err = pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return false, fmt.Errorf("connect to maintenance database: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		if isDuplicateDatabase(err) {
			return false, nil
		}
		return false, fmt.Errorf("create database %s: %w", name, err)
	}
	return true, nil
}

func isDuplicateDatabase(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P04"
}

// RedactURL hides the password of a connection URL for logs.
func RedactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable DATABASE_URL)"
	}
	return u.Redacted()
}
