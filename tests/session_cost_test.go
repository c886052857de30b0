package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/testdb"
)

// rowsReadFrom runs each statement of sent under EXPLAIN ANALYZE, with the
// arguments the store sent, and returns the rows each named table gave
// its plans: what the statements cost PostgreSQL, counted, not timed.
func rowsReadFrom(t *testing.T, dbURL string, sent []sentQuery) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn := plannedConn(t, dbURL)
	defer conn.Close(ctx)
	type node struct {
		Relation string  `json:"Relation Name"`
		Rows     float64 `json:"Actual Rows"`
		Loops    float64 `json:"Actual Loops"`
		Plans    []node  `json:"Plans"`
	}
	read := map[string]int{}
	var walk func(n node)
	walk = func(n node) {
		if n.Relation != "" {
			read[n.Relation] += int(n.Rows * n.Loops)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	for _, q := range sent {
		var out []byte
		require.NoError(t, conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q.SQL, q.Args...).Scan(&out), q.SQL)
		var plans []struct{ Plan node }
		require.NoError(t, json.Unmarshal(out, &plans))
		walk(plans[0].Plan)
	}
	return read
}

// A request made with a session token reads its key's grants as the key's
// own lookup does, from the key's few rows of key_grant_sets (migration
// 00043), not from key_grants: a token of a key of 300 restaurants x 5
// scopes reads no grant row of the key, where it read all 1,500 on every
// request before. A key whose summary a hand edit deleted is read from
// key_grants, and the token's rules hold either way: a key that lost the
// token's grant, or was revoked, refuses the token.
func TestSessionReadsItsKeysScopeSetsNotGrants(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	ctx := context.Background()
	st, rec := recordingStore(t, dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	scopes := []string{"areas:read", "areas:write", "equipment:write", "suppliers:read", "users:read"}
	grants := make([]auth.Grant, 300)
	ids := make([]string, len(grants))
	for i := range grants {
		ids[i] = fmt.Sprintf("r%04d", i)
		grants[i] = auth.Grant{RestaurantID: ids[i], Scopes: scopes}
	}
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(t, err)
	key := auth.NewKey()
	_, err = st.KeyCreate(ctx, key, "large", nil, grants)
	require.NoError(t, err)
	var keyID int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, key.PublicID).Scan(&keyID))
	token := auth.NewToken()
	carried := []auth.Grant{{RestaurantID: "r0007", Scopes: []string{"areas:write"}}}
	require.NoError(t, st.SessionCreate(ctx, keyID, token, time.Now().Add(time.Hour), carried))
	cred, ok := auth.ParseCredential(token.Full)
	require.True(t, ok)

	// resolve authenticates the token as a request does and counts the
	// rows its statements read.
	resolve := func() (*auth.Principal, auth.Reason, *auth.SessionRecord, map[string]int) {
		t.Helper()
		rec.take()
		s, err := st.SessionForAuth(ctx, token.PublicID)
		require.NoError(t, err)
		require.NotNil(t, s)
		p, reason := s.Check(cred, time.Now())
		return p, reason, s, rowsReadFrom(t, dbURL, rec.take())
	}

	p, reason, s, read := resolve()
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, carried, p.Grants())
	require.Equal(t, key.PublicID, s.Key.PublicID)
	require.Equal(t, grants, auth.NewPrincipal(0, "", s.Key.Grants).Grants(), "the key's grants, read from its summary")
	require.Equal(t, 0, read["key_grants"], "rows of key_grants read to authenticate a token")
	// The key's one scope set, and the same row again as the probe that
	// keeps the lookup from reading key_grants.
	require.Equal(t, 2, read["key_grant_sets"], "rows of key_grant_sets read to authenticate a token")
	// The token's one grant, once for each of its two arrays.
	require.Equal(t, 2, read["session_grants"], "rows of session_grants read to authenticate a token")

	// A hand edit deletes the summary: the key is read from key_grants,
	// with the edit.
	_, err = conn.Exec(ctx, `DELETE FROM key_grants WHERE key_id = $1 AND restaurant_id = 'r0299'`, keyID)
	require.NoError(t, err)
	p, reason, s, read = resolve()
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, carried, p.Grants())
	require.Equal(t, grants[:299], auth.NewPrincipal(0, "", s.Key.Grants).Grants(), "the key's grants, read from key_grants")
	require.Equal(t, 299*len(scopes), read["key_grants"], "a key without its summary is read from key_grants")

	// A hand edit removing the token's grant refuses the token at once.
	_, err = conn.Exec(ctx, `DELETE FROM key_grants WHERE key_id = $1 AND restaurant_id = 'r0007' AND scope = 'areas:write'`, keyID)
	require.NoError(t, err)
	_, reason, _, _ = resolve()
	require.Equal(t, auth.ReasonGrantsChanged, reason)
	_, err = conn.Exec(ctx, `INSERT INTO key_grants (key_id, restaurant_id, scope) VALUES ($1, 'r0007', 'areas:write')`, keyID)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `SELECT foodsafe_key_grant_sets_rebuild($1)`, keyID)
	require.NoError(t, err)
	_, reason, _, read = resolve()
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, 0, read["key_grants"], "the rebuilt summary is read")

	// Revoking the key refuses its token, summary or not.
	_, err = st.KeyRevoke(ctx, key.PublicID)
	require.NoError(t, err)
	_, reason, _, _ = resolve()
	require.Equal(t, auth.ReasonRevoked, reason)
}
