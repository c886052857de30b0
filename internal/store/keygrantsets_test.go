package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/store"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// lookupReads runs KeyAuthLookup of publicID under EXPLAIN ANALYZE and
// returns the rows it read from key_grants and the rows it sent: what
// loading the key costs PostgreSQL and the wire, counted, not timed.
func lookupReads(t *testing.T, conn *pgx.Conn, publicID string) (grantRows, sent int) {
	t.Helper()
	var out []byte
	require.NoError(t, conn.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+db.KeyAuthLookup, publicID).Scan(&out))
	type node struct {
		Relation string  `json:"Relation Name"`
		Rows     float64 `json:"Actual Rows"`
		Loops    float64 `json:"Actual Loops"`
		Plans    []node  `json:"Plans"`
	}
	var plans []struct{ Plan node }
	require.NoError(t, json.Unmarshal(out, &plans))
	var walk func(n node)
	walk = func(n node) {
		if n.Relation == "key_grants" {
			grantRows += int(n.Rows * n.Loops)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	return grantRows, int(plans[0].Plan.Rows)
}

// A key's lookup reads its grants grouped by scope set (key_grant_sets,
// migration 00043), not one row per grant: a key of 300 restaurants x 5
// scopes, the same on each, is one row sent and no row of key_grants
// read. Before, the lookup read its 1,500 grant rows and sent 300.
func TestKeyLookupReadsScopeSetsNotGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	s, conn := storeAndConn(t, url)
	var err error

	scopes := []string{"areas:read", "deliveries:read", "equipment:read", "suppliers:read", "users:read"}
	grants := make([]auth.Grant, 300)
	ids := make([]string, len(grants))
	for i := range grants {
		ids[i] = fmt.Sprintf("r%04d", i)
		grants[i] = auth.Grant{RestaurantID: ids[i], Scopes: scopes}
	}
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(t, err)
	issued := auth.NewKey()
	_, err = s.KeyCreate(ctx, issued, "large", nil, grants)
	require.NoError(t, err)

	grantRows, sent := lookupReads(t, conn, issued.PublicID)
	require.Equal(t, 0, grantRows, "rows of key_grants read to load the key")
	require.Equal(t, 1, sent, "rows sent to load the key")

	rec, err := s.KeyForAuth(ctx, issued.PublicID)
	require.NoError(t, err)
	require.Equal(t, grants, auth.NewPrincipal(0, "", rec.Grants).Grants())
}

// The summary is never older than the grants: a change by hand deletes
// it in its statement, so the key is read from key_grants (correctly, at
// the old cost) until a key command or the rebuild function makes it
// again; the principal and the grants' entity tag are the same whichever
// way the key was read, and change exactly when the grants do.
func TestKeyGrantSetsFollowEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	s, conn := storeAndConn(t, url)
	var err error
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := conn.Exec(ctx, sql, args...)
		require.NoError(t, err, sql)
	}
	exec(`INSERT INTO restaurants (id) VALUES ('r1'), ('r2'), ('r3'), ('r4')`)
	ab, a := []string{"areas:read", "users:read"}, []string{"areas:read"}
	issued := auth.NewKey()
	other := auth.NewKey()
	_, err = s.KeyCreate(ctx, issued, "k", nil, []auth.Grant{
		{RestaurantID: "r1", Scopes: ab}, {RestaurantID: "r2", Scopes: ab}, {RestaurantID: "r3", Scopes: a}})
	require.NoError(t, err)
	_, err = s.KeyCreate(ctx, other, "other", nil, []auth.Grant{{RestaurantID: "r4", Scopes: a}})
	require.NoError(t, err)

	sets := func(pub string) (n int) {
		t.Helper()
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM key_grant_sets s JOIN api_keys k ON k.id = s.key_id
			WHERE k.public_id = $1`, pub).Scan(&n))
		return n
	}
	principal := func(pub string) *auth.Principal {
		t.Helper()
		rec, err := s.KeyForAuth(ctx, pub)
		require.NoError(t, err)
		require.NotNil(t, rec)
		return auth.NewPrincipal(rec.ID, rec.PublicID, rec.Grants)
	}
	// fromGrants is the key read from key_grants: its summary taken away.
	fromGrants := func(pub string) *auth.Principal {
		t.Helper()
		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `DELETE FROM key_grant_sets`)
		require.NoError(t, err)
		var ids [][]string
		var scopes [][]string
		rows, err := tx.Query(ctx, db.KeyAuthLookup, pub)
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			var public string
			var digest []byte
			var exp, rev *time.Time
			var r, sc []string
			require.NoError(t, rows.Scan(&id, &public, &digest, &exp, &rev, &r, &sc))
			ids, scopes = append(ids, r), append(scopes, sc)
		}
		require.NoError(t, rows.Err())
		var g []auth.Grant
		for i := range ids {
			require.Len(t, ids[i], 1, "read from key_grants: one row per restaurant")
			g = append(g, auth.Grant{RestaurantID: ids[i][0], Scopes: scopes[i]})
		}
		return auth.NewPrincipal(0, pub, g)
	}
	// same checks a principal read from the summary against the grants.
	same := func(p *auth.Principal, pub string) {
		t.Helper()
		want := fromGrants(pub)
		require.Equal(t, want.Grants(), p.Grants())
		require.Equal(t, want.GrantsTag(), p.GrantsTag())
	}

	require.Equal(t, 2, sets(issued.PublicID), "two scope sets")
	p0 := principal(issued.PublicID)
	same(p0, issued.PublicID)
	tag0 := p0.GrantsTag()
	grantRows, _ := lookupReads(t, conn, issued.PublicID)
	require.Zero(t, grantRows)

	// By hand: the summary goes, the lookup reads the grants.
	exec(`DELETE FROM key_grants g USING api_keys k WHERE g.key_id = k.id AND k.public_id = $1
		AND g.restaurant_id = 'r2' AND g.scope = 'users:read'`, issued.PublicID)
	require.Zero(t, sets(issued.PublicID))
	require.Equal(t, 1, sets(other.PublicID), "another key's summary stays")
	grantRows, _ = lookupReads(t, conn, issued.PublicID)
	require.Equal(t, 4, grantRows)
	p1 := principal(issued.PublicID)
	require.False(t, p1.Can("r2", "users:read"))
	require.True(t, p1.Can("r2", "areas:read"))
	require.NotEqual(t, tag0, p1.GrantsTag())

	// The same grants again: the same principal and tag as at first.
	exec(`INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT id, 'r2', 'users:read' FROM api_keys WHERE public_id = $1`, issued.PublicID)
	require.Zero(t, sets(issued.PublicID))
	require.Equal(t, tag0, principal(issued.PublicID).GrantsTag())
	exec(`SELECT foodsafe_key_grant_sets_rebuild(id) FROM api_keys WHERE public_id = $1`, issued.PublicID)
	require.Equal(t, 2, sets(issued.PublicID))
	require.Equal(t, tag0, principal(issued.PublicID).GrantsTag())

	// An UPDATE by hand, then the key commands, which rebuild.
	exec(`UPDATE key_grants g SET scope = 'equipment:read' FROM api_keys k
		WHERE g.key_id = k.id AND k.public_id = $1 AND g.restaurant_id = 'r3'`, issued.PublicID)
	require.Zero(t, sets(issued.PublicID))
	require.True(t, principal(issued.PublicID).Can("r3", "equipment:read"))
	ctx2, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, s.KeyGrant(ctx2, issued.PublicID, []auth.Grant{{RestaurantID: "r4", Scopes: ab}}))
	require.Equal(t, 2, sets(issued.PublicID), "{areas, users} on r1, r2 and r4; {equipment} on r3")
	p2 := principal(issued.PublicID)
	same(p2, issued.PublicID)
	require.True(t, p2.Can("r4", "users:read"))
	_, err = s.KeyUngrant(ctx2, issued.PublicID, auth.Grant{RestaurantID: "r1"})
	require.NoError(t, err)
	p3 := principal(issued.PublicID)
	same(p3, issued.PublicID)
	require.False(t, p3.HasRestaurant("r1"))
	require.NotEqual(t, p2.GrantsTag(), p3.GrantsTag())
	grantRows, _ = lookupReads(t, conn, issued.PublicID)
	require.Zero(t, grantRows)

	// A grant command that changes nothing keeps the summary right.
	require.NoError(t, s.KeyGrant(ctx2, issued.PublicID, []auth.Grant{{RestaurantID: "r4", Scopes: a}}))
	same(principal(issued.PublicID), issued.PublicID)
	require.Equal(t, p3.GrantsTag(), principal(issued.PublicID).GrantsTag())

	exec(`TRUNCATE key_grants`)
	require.Zero(t, sets(issued.PublicID))
	require.Zero(t, sets(other.PublicID))
	rec, err := s.KeyForAuth(ctx, issued.PublicID)
	require.NoError(t, err)
	require.Empty(t, rec.Grants)
}

// A rebuild that starts while another transaction has changed the key's
// grants and not committed waits for it, then reads its change: without
// the lock on the key's row it would read the grants as they were and
// store a summary holding a grant the other transaction took away, which
// the other's trigger, run before, could not delete. The summary is
// already gone when the change begins (an earlier change by hand), so no
// row of key_grant_sets makes the rebuild wait: only the key's lock does.
//
// The same holds whatever default_transaction_isolation the database
// has: a key command's transaction is READ COMMITTED, whose statements
// each take a new snapshot. Before it said so, a database defaulting to
// REPEATABLE READ made the rebuild read the grants as of its first
// statement, before the change it waited for, and the revoked grant was
// honoured until the key's next change.
func TestKeyGrantSetsRebuildWaitsForAChangeInFlight(t *testing.T) {
	t.Parallel()
	for _, isolation := range []string{"", "repeatable read", "serializable"} {
		name := isolation
		if name == "" {
			name = "server default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rebuildWaitsForAChangeInFlight(t, isolation)
		})
	}
}

// defaultIsolation makes isolation the default_transaction_isolation of
// url's database (for the connections opened afterwards); "" leaves the
// server's.
func defaultIsolation(t *testing.T, url, isolation string) {
	t.Helper()
	if isolation == "" {
		return
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer func() { _ = c.Close(ctx) }()
	_, err = c.Exec(ctx, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), '"+isolation+"'); END $$")
	require.NoError(t, err)
}

// readCommitted begins a transaction at READ COMMITTED, as a DBA editing
// grants by hand must (docs/dbas.md), whatever the database's default.
func readCommitted(t *testing.T, conn *pgx.Conn) pgx.Tx {
	t.Helper()
	tx, err := conn.BeginTx(context.Background(), pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	require.NoError(t, err)
	return tx
}

func rebuildWaitsForAChangeInFlight(t *testing.T, isolation string) {
	ctx := context.Background()
	url := testdb.URL(t)
	defaultIsolation(t, url, isolation)
	s, conn, issued := keyOfTwoRestaurants(t, url)
	var err error

	// A hand edit, committed: r2 loses users:read, the summary goes.
	tx := readCommitted(t, conn)
	_, err = tx.Exec(ctx, `DELETE FROM key_grants g USING api_keys k WHERE g.key_id = k.id AND k.public_id = $1
		AND g.restaurant_id = 'r2' AND g.scope = 'users:read'`, issued.PublicID)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	// Another, in flight: r1 loses users:read.
	tx = readCommitted(t, conn)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `DELETE FROM key_grants g USING api_keys k WHERE g.key_id = k.id AND k.public_id = $1
		AND g.restaurant_id = 'r1' AND g.scope = 'users:read'`, issued.PublicID)
	require.NoError(t, err)

	// The rebuild a key command ends with (an idempotent grant), meanwhile.
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		done <- s.KeyGrant(cctx, issued.PublicID, []auth.Grant{{RestaurantID: "r2", Scopes: []string{"areas:read"}}})
	}()
	// conn is inside tx: PostgreSQL is asked on another connection.
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(ctx) })
	waiting := func() (n int) {
		require.NoError(t, other.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%KeyGrantSetsRebuild%'`).Scan(&n))
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for waiting() == 0 {
		require.True(t, time.Now().Before(deadline), "the rebuild never waited for the change in flight")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)

	rec, err := s.KeyForAuth(ctx, issued.PublicID)
	require.NoError(t, err)
	p := auth.NewPrincipal(rec.ID, rec.PublicID, rec.Grants)
	require.False(t, p.Can("r1", "users:read"), "the summary holds a grant taken away")
	require.False(t, p.Can("r2", "users:read"))
	require.True(t, p.Can("r1", "areas:read"))
	require.True(t, p.Can("r2", "areas:read"))
	grantRows, _ := lookupReads(t, other, issued.PublicID)
	require.Zero(t, grantRows, "read from the rebuilt summary")
}

// In a REPEATABLE READ or SERIALIZABLE transaction a statement sees the
// database as of the transaction's first one, so neither the triggers nor
// the rebuild can keep the summary right there: a trigger cannot delete a
// summary rebuilt after that snapshot, and a rebuild would build from
// grants changed since. A change of key_grants there is refused with an
// error saying to use READ COMMITTED, and a rebuild there only deletes
// the key's summary (the lookup then reads key_grants). Before, both
// committed and the key kept a grant taken away.
func TestKeyGrantSetsOutsideReadCommitted(t *testing.T) {
	t.Parallel()
	for _, level := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			keyGrantSetsOutsideReadCommitted(t, level)
		})
	}
}

func keyGrantSetsOutsideReadCommitted(t *testing.T, level pgx.TxIsoLevel) {
	ctx := context.Background()
	url := testdb.URL(t)
	s, conn, issued := keyOfTwoRestaurants(t, url)
	ab := []string{"areas:read", "users:read"} // the key's scopes on r1 and r2
	var keyID int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, issued.PublicID).Scan(&keyID))
	drop := func(restaurantID string) string {
		return fmt.Sprintf(`DELETE FROM key_grants WHERE key_id = %d AND restaurant_id = '%s' AND scope = 'users:read'`, keyID, restaurantID)
	}
	// agrees checks that the key's lookup honours exactly what key_grants
	// holds, whether it read the summary or the grants.
	agrees := func(t *testing.T) {
		t.Helper()
		rec, err := s.KeyForAuth(ctx, issued.PublicID)
		require.NoError(t, err)
		p := auth.NewPrincipal(rec.ID, rec.PublicID, rec.Grants)
		for _, r := range []string{"r1", "r2"} {
			for _, scope := range ab {
				var held bool
				require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM key_grants
					WHERE key_id = $1 AND restaurant_id = $2 AND scope = $3)`, keyID, r, scope).Scan(&held))
				if held {
					require.True(t, p.Can(r, scope), "the lookup lost %s on %s", scope, r)
				} else {
					require.False(t, p.Can(r, scope), "the summary holds a grant taken away: %s on %s", scope, r)
				}
			}
		}
	}

	t.Run("a change of key_grants is refused", func(t *testing.T) {
		// The summary is gone (a change by hand at READ COMMITTED) when the
		// transaction's snapshot is taken, and rebuilt (a key command)
		// after it: the change's trigger cannot see the new summary.
		_, err := conn.Exec(ctx, drop("r2"))
		require.NoError(t, err)
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SELECT 1`)
		require.NoError(t, err)
		require.NoError(t, s.KeyGrant(ctx, issued.PublicID, []auth.Grant{{RestaurantID: "r1", Scopes: ab}}))
		_, err = tx.Exec(ctx, drop("r1"))
		if err == nil {
			require.NoError(t, tx.Commit(ctx))
		} else {
			require.NoError(t, tx.Rollback(ctx))
		}
		agrees(t)
		var pe *pgconn.PgError
		require.ErrorAs(t, err, &pe, "the change is refused")
		require.Equal(t, "25000", pe.Code, "invalid_transaction_state")
		require.Contains(t, pe.Message, "READ COMMITTED")
		require.Contains(t, pe.Hint, "BEGIN ISOLATION LEVEL READ COMMITTED")

		// What the error tells the DBA to do works.
		tx = readCommitted(t, conn)
		_, err = tx.Exec(ctx, drop("r1"))
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		agrees(t)
	})

	t.Run("a rebuild only deletes the summary", func(t *testing.T) {
		_, err := conn.Exec(ctx, `DELETE FROM key_grants WHERE key_id = $1`, keyID)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `INSERT INTO key_grants (key_id, restaurant_id, scope)
			SELECT $1, r, s FROM unnest(ARRAY['r1', 'r2']) r, unnest(ARRAY['areas:read', 'users:read']) s`, keyID)
		require.NoError(t, err)
		// The snapshot is taken, then r1 loses users:read (committed), then
		// the rebuild runs from that snapshot.
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SELECT 1`)
		require.NoError(t, err)
		other, err := pgx.Connect(ctx, url)
		require.NoError(t, err)
		t.Cleanup(func() { _ = other.Close(ctx) })
		_, err = other.Exec(ctx, drop("r1"))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT foodsafe_key_grant_sets_rebuild($1)`, keyID)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		agrees(t)
		grantRows, _ := lookupReads(t, conn, issued.PublicID)
		require.NotZero(t, grantRows, "no summary: the lookup reads key_grants")

		// A rebuild at READ COMMITTED builds it again.
		_, err = conn.Exec(ctx, `SELECT foodsafe_key_grant_sets_rebuild($1)`, keyID)
		require.NoError(t, err)
		agrees(t)
		grantRows, _ = lookupReads(t, conn, issued.PublicID)
		require.Zero(t, grantRows)
	})
}

// keyOfTwoRestaurants opens the store on url and a connection of its own,
// and creates a key granted areas:read and users:read on r1 and r2 by
// the key command (so with its summary).
func keyOfTwoRestaurants(t *testing.T, url string) (*store.Store, *pgx.Conn, auth.Issued) {
	t.Helper()
	ab := []string{"areas:read", "users:read"}
	return storeWithKey(t, url, auth.Grant{RestaurantID: "r1", Scopes: ab}, auth.Grant{RestaurantID: "r2", Scopes: ab})
}

// storeWithKey opens the store on url and a connection of its own, adds
// the restaurants r1 and r2, and creates a key of grants by the key
// command (so with its summary).
func storeWithKey(t *testing.T, url string, grants ...auth.Grant) (*store.Store, *pgx.Conn, auth.Issued) {
	t.Helper()
	ctx := context.Background()
	s, conn := storeAndConn(t, url)
	var err error
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1'), ('r2')`)
	require.NoError(t, err)
	issued := auth.NewKey()
	_, err = s.KeyCreate(ctx, issued, "k", nil, grants)
	require.NoError(t, err)
	return s, conn, issued
}

// storeAndConn opens the store on url and a connection of its own, both
// closed when the test ends.
func storeAndConn(t *testing.T, url string) (*store.Store, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return s, conn
}
