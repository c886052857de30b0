// Package testdb gives every test its own freshly migrated PostgreSQL
// database, cloned from a template so tests run in parallel against a real
// server. Where the server comes from, in order:
//
//  1. TEST_DATABASE_URL, when set (any database on the target server; the
//     harness creates its own databases next to it);
//  2. a container from testcontainers-go's postgres module, when a Docker
//     engine answers (image TEST_POSTGRES_IMAGE, default postgres:16-alpine);
//     when the container cannot start (no registry to pull from, a proxy,
//     an outage), one warning and on to 3;
//  3. the local server at 127.0.0.1:5432 (user postgres), when it answers;
//  4. otherwise the test fails and says what to set. It never skips.
//
// A container started here is removed when the test binary exits: by Main
// when the tests return, else (a panic, -timeout, Ctrl-C, SIGKILL) by a
// watchdog process (watchdog.go); whether or not Ryuk runs
// (TESTCONTAINERS_RYUK_DISABLED=true).
//
// CITUS_DATABASE_URL (make test-citus) overrides all of these: see citus.go.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for the SQL wait strategy

	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/sql/migrations"
)

const (
	localURL     = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultImage = "postgres:16-alpine"
	// templateLock is the advisory lock id serialising template builds
	// across test processes (go test runs packages in parallel).
	templateLock = 7_220_011_300
)

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  error
	container  testcontainers.Container

	templateOnce sync.Once
	templateName string
	templateErr  error
)

// Main wraps testing.M.Run so a container started for this test binary is
// terminated when it exits (Ryuk also reaps it, unless disabled). Call it
// from TestMain: os.Exit(testdb.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	stopContainer()
	return code
}

// stopContainer terminates the container this binary started, if any
// (also one that never became ready), and forgets it.
func stopContainer() {
	if container == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := container.Terminate(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: warning: the PostgreSQL container did not stop: %v\n", err)
	}
	stopWatchdog(err == nil)
	container = nil
}

// Source reports which server the harness uses, for test logs.
func Source() string {
	switch {
	case os.Getenv("TEST_DATABASE_URL") != "":
		return "TEST_DATABASE_URL"
	case container != nil:
		return "testcontainers"
	default:
		return "local server 127.0.0.1:5432"
	}
}

// URL creates a fresh database migrated to the latest schema, dropped when
// the test ends, and returns its connection string.
func URL(t testing.TB) string {
	t.Helper()
	if c := citusURL(); c != "" {
		return citusDatabase(t, c)
	}
	resolveServer()
	if serverErr != nil {
		t.Fatalf("testdb: %v", serverErr)
	}
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(serverURL) })
	if templateErr != nil {
		t.Fatalf("testdb: template: %v", templateErr)
	}
	return newDatabase(t, serverURL, "foodsafe_test_", templateName)
}

// newDatabase creates a database named prefix and random letters from
// template on the server of admin, dropped when the test ends, and
// returns its connection string.
func newDatabase(t testing.TB, admin, prefix, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := prefix + strings.ToLower(randText()[:16])
	if err := adminExec(ctx, admin, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(template)); err != nil {
		t.Fatalf("testdb: create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("testdb: drop %s: %v", name, err)
		}
	})
	return withDatabase(admin, name)
}

// EmptyURL creates an empty database (no foodsafe schema) on the same
// server, dropped when the test ends: a place for a client's own tables,
// such as a foodsafe-sync mirror.
func EmptyURL(t testing.TB) string {
	t.Helper()
	admin := citusURL()
	if admin == "" {
		resolveServer()
		if serverErr != nil {
			t.Fatalf("testdb: %v", serverErr)
		}
		admin = serverURL
	}
	return newDatabase(t, admin, "foodsafe_empty_", "template0")
}

func resolveServer() {
	serverOnce.Do(func() {
		serverURL, serverErr = findServer()
		if serverErr == nil {
			fmt.Fprintf(os.Stderr, "testdb: PostgreSQL from %s\n", Source())
		}
	})
}

func findServer() (string, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		if err := ping(u); err != nil {
			return "", fmt.Errorf("TEST_DATABASE_URL does not answer: %w", err)
		}
		return u, nil
	}
	var dockerErr error
	if dockerAvailable() {
		u, err := startContainer()
		if err == nil {
			return u, nil
		}
		// An engine that answers but cannot run the image (an air-gapped
		// machine, a proxy, a registry outage) is no reason to fail every
		// test while a server listens where the quick start put it.
		dockerErr = fmt.Errorf("a Docker engine answered but the PostgreSQL container (image %s) did not start: %w", image(), err)
		if strings.Contains(err.Error(), "reaper: ") {
			// Ryuk's image comes from Docker Hub, which such a machine
			// often cannot reach either, while the PostgreSQL image is at
			// hand; the harness removes its container without Ryuk.
			dockerErr = fmt.Errorf("%w (Ryuk, testcontainers' reaper, did not start: TESTCONTAINERS_RYUK_DISABLED=true "+
				"runs without it, and the container is still removed)", dockerErr)
		}
		stopContainer()
	}
	if err := ping(localURL); err != nil {
		if dockerErr != nil {
			return "", fmt.Errorf("%w; and no local server answers at 127.0.0.1:5432 (%v): fix Docker (inside some sandboxes set "+
				"TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1), or set TEST_DATABASE_URL", dockerErr, err)
		}
		return "", fmt.Errorf("no PostgreSQL for tests: set TEST_DATABASE_URL to a server the tests may create databases on, "+
			"or start a Docker engine (testcontainers), or run PostgreSQL on 127.0.0.1:5432 with user postgres and trust auth (%v)", err)
	}
	if dockerErr != nil {
		fmt.Fprintf(os.Stderr, "testdb: warning: %v; using the local server 127.0.0.1:5432 instead (set TEST_DATABASE_URL to choose)\n", dockerErr)
	}
	return localURL, nil
}

// startupTimeout bounds the wait for the container's first successful query.
func startupTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("TEST_POSTGRES_STARTUP_TIMEOUT")); err == nil {
		return d
	}
	return 2 * time.Minute
}

func image() string {
	if i := os.Getenv("TEST_POSTGRES_IMAGE"); i != "" {
		return i
	}
	return defaultImage
}

func dockerAvailable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	return p.Health(ctx) == nil
}

// startContainer runs the postgres module, waiting until a SQL query
// succeeds rather than counting log lines (which differ between images).
func startContainer() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const user, password, dbname = "postgres", "postgres", "postgres"
	c, err := tcpostgres.Run(ctx, image(),
		tcpostgres.WithUsername(user),
		tcpostgres.WithPassword(password),
		tcpostgres.WithDatabase(dbname),
		// Arguments only: images' entrypoints prepend `postgres` to flags.
		testcontainers.WithCmd("-c", "fsync=off", "-c", "max_connections=200"),
		testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
			PostCreates: []testcontainers.ContainerHook{func(_ context.Context, c testcontainers.Container) error {
				return startWatchdog(c.GetContainerID())
			}},
		}),
		testcontainers.WithWaitStrategy(
			wait.ForSQL("5432/tcp", "pgx", func(host string, port network.Port) string {
				return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", user, password,
					net.JoinHostPort(host, port.Port()), dbname)
			}).WithStartupTimeout(startupTimeout()).WithPollInterval(200*time.Millisecond)),
	)
	if c != nil {
		container = c
	}
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

func ping(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// ensureTemplate builds, once per server and schema, a template database
// holding the migrated schema. Its name carries a hash of the migrations,
// so editing a migration builds a new template instead of reusing a stale
// one. An advisory lock keeps parallel test processes from racing.
func ensureTemplate(admin string) (string, error) {
	hash, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "foodsafe_tpl_" + hash[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock) //nolint:errcheck

	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Build under a scratch name and rename: a template is never visible
	// half-migrated, and nobody stays connected to it (clones need that).
	build := name + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(build)+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(build)); err != nil {
		return "", err
	}
	if _, err := store.Migrate(ctx, withDatabase(admin, build)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(build)+" RENAME TO "+ident(name)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH IS_TEMPLATE true"); err != nil {
		return "", err
	}
	return name, nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	var names []string
	err := fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sql") {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(migrations.FS, n)
		if err != nil {
			return "", err
		}
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func randText() string { return rand.Text() }

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func withDatabase(u, name string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(fmt.Sprintf("testdb: bad server URL: %v", err))
	}
	parsed.Path = "/" + name
	return parsed.String()
}
