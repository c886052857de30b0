package testdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/store"
)

// Citus mode (make test-citus): when CITUS_DATABASE_URL names a Citus
// coordinator, every test database is created on the coordinator and on
// each worker of CITUS_WORKERS (host:port, comma-separated), gets the
// extension everywhere, has its workers added — Citus keeps its node list
// per database, and a database without nodes silently keeps every shard on
// the coordinator — and is then migrated, which distributes the tables.
// Template cloning does not apply: shards live on the workers.

// citusURL is the coordinator's admin URL in Citus mode, or "".
func citusURL() string { return os.Getenv("CITUS_DATABASE_URL") }

// citusWorkers lists the workers' host:port.
func citusWorkers() ([]string, error) {
	var out []string
	for _, w := range strings.Split(os.Getenv("CITUS_WORKERS"), ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(w); err != nil {
			return nil, fmt.Errorf("CITUS_WORKERS: %q is not host:port", w)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("CITUS_WORKERS is empty: name the workers (host:port,...) the coordinator reaches")
	}
	return out, nil
}

// withHost is u with its host:port replaced.
func withHost(u, hostport string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(fmt.Sprintf("testdb: bad server URL: %v", err))
	}
	parsed.Host = hostport
	return parsed.String()
}

// addNodes serialises the workers' registration across test databases.
var addNodes sync.Mutex

// citusDatabase creates, distributes and migrates a test database on the
// cluster, dropped everywhere when the test ends.
func citusDatabase(t testing.TB, coordinator string) string {
	t.Helper()
	workers, err := citusWorkers()
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := "foodsafe_test_" + strings.ToLower(randText()[:16])
	admins := []string{coordinator}
	for _, w := range workers {
		admins = append(admins, withHost(coordinator, w))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, a := range admins {
			if err := adminExec(ctx, a, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
				t.Errorf("testdb: drop %s: %v", name, err)
			}
		}
	})
	for _, a := range admins {
		if err := adminExec(ctx, a, "CREATE DATABASE "+ident(name)); err != nil {
			t.Fatalf("testdb: create %s on %s: %v", name, a, err)
		}
		if err := adminExec(ctx, withDatabase(a, name), "CREATE EXTENSION citus"); err != nil {
			t.Fatalf("testdb: citus on %s: %v", a, err)
		}
	}
	conn, err := pgx.Connect(ctx, withDatabase(coordinator, name))
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Close(ctx)
	host, port, err := hostPort(coordinator)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if _, err := conn.Exec(ctx, "SELECT citus_set_coordinator_host($1, $2)", host, port); err != nil {
		t.Fatalf("testdb: coordinator host: %v", err)
	}
	// One test database at a time adds its workers: concurrent
	// citus_add_node calls from many databases update the workers'
	// catalogs at once and fail ("tuple concurrently updated").
	addNodes.Lock()
	for _, w := range workers {
		h, p, _ := net.SplitHostPort(w)
		if _, err := conn.Exec(ctx, "SELECT citus_add_node($1, $2::int)", h, p); err != nil {
			addNodes.Unlock()
			t.Fatalf("testdb: add worker %s: %v", w, err)
		}
	}
	addNodes.Unlock()
	u := withDatabase(coordinator, name)
	if _, err := store.Migrate(ctx, u); err != nil {
		t.Fatalf("testdb: migrate on Citus: %v", err)
	}
	return u
}

func hostPort(u string) (string, int, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", 0, err
	}
	port := 5432
	if p := parsed.Port(); p != "" {
		if _, err := fmt.Sscan(p, &port); err != nil {
			return "", 0, err
		}
	}
	return parsed.Hostname(), port, nil
}
