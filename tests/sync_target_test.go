package tests

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A PostgreSQL target whose database does not exist: created on the first
// run when the role may create databases; otherwise refused with exit 2
// and a message saying what to do, not a driver error.
func TestSyncCreatesPostgresTarget(t *testing.T) {
	t.Parallel()
	admin := testdb.EmptyURL(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, admin)
		require.NoError(t, err)
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		require.NoError(t, err)
	}
	target := func(user, database string) string {
		u, err := url.Parse(admin)
		require.NoError(t, err)
		if user != "" {
			u.User = url.UserPassword(user, "mirror-role-pw")
		}
		u.Path = "/" + database
		return u.String()
	}
	suffix := strings.ToLower(rand.Text()[:12])

	name := "foodsafe_mirror_" + suffix
	t.Cleanup(func() { exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	r := runSync(t, "", "status", "--to", target("", name))
	require.Equal(t, 0, r.Code, "stderr:\n%s", r.Stderr)
	require.Contains(t, r.Stdout, "files: 0")

	role := "foodsafe_mirror_role_" + suffix
	exec("CREATE ROLE " + role + " LOGIN NOCREATEDB PASSWORD 'mirror-role-pw'")
	t.Cleanup(func() { exec("DROP ROLE IF EXISTS " + role) })
	r = runSync(t, "", "status", "--to", target(role, name+"_denied"))
	require.Equal(t, 2, r.Code, "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	require.Contains(t, r.Stderr, `database "`+name+`_denied" does not exist and role "`+role+`" may not create it`)
	require.Contains(t, r.Stderr, "createdb "+name+"_denied")
	require.NotContains(t, r.Stderr, "mirror-role-pw")
}
