package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	// The token's one scope set (migration 00045).
	require.Equal(t, 1, read["session_grant_sets"], "rows of session_grant_sets read to authenticate a token")

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

// A token opened without restaurantId carries all of its key's grants,
// and costs what a token of one restaurant does: opening it sends the same
// statements (its grants in one, as scope sets, migration 00045), and each
// of its requests reads one row per scope set of the token, where a token
// of a key of 300 restaurants x 5 scopes sent 300 inserts and read its
// 1,500 grants twice on every request. The token's rules hold: it carries
// exactly the key's grants, a hand edit removing one refuses it, and a
// grant removed by `keys ungrant` kills it for good.
func TestWholeKeySessionCostsWhatAOneRestaurantSessionDoes(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	ctx := context.Background()
	st, rec := recordingStore(t, dbURL)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })

	// Two scope sets: 100 restaurants hold three scopes, 200 hold five.
	five := []string{"areas:read", "areas:write", "equipment:write", "suppliers:read", "users:read"}
	three := []string{"areas:read", "areas:write", "users:read"}
	grants := make([]auth.Grant, 300)
	ids := make([]string, len(grants))
	for i := range grants {
		ids[i] = fmt.Sprintf("r%04d", i)
		grants[i] = auth.Grant{RestaurantID: ids[i], Scopes: five}
		if i%3 == 0 {
			grants[i].Scopes = three
		}
	}
	_, err = conn.Exec(ctx, `INSERT INTO restaurants (id) SELECT unnest($1::text[])`, ids)
	require.NoError(t, err)
	key := auth.NewKey()
	_, err = st.KeyCreate(ctx, key, "large", nil, grants)
	require.NoError(t, err)
	var keyID int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT id FROM api_keys WHERE public_id = $1`, key.PublicID).Scan(&keyID))
	// What the handler hands the store: the key's principal's grants,
	// whole or narrowed.
	held := auth.NewPrincipal(keyID, key.PublicID, grants).Grants()

	var checks []sentQuery // the last token's check against its key's grants
	open := func(carried []auth.Grant) (auth.Issued, int) {
		t.Helper()
		token := auth.NewToken()
		rec.take()
		require.NoError(t, st.SessionCreate(ctx, keyID, token, time.Now().Add(time.Hour), carried))
		sent := rec.take()
		checks = nil
		for _, q := range sent {
			if strings.Contains(q.SQL, "SessionGrantsMissing") {
				checks = append(checks, q)
			}
		}
		return token, len(sent)
	}
	resolve := func(token auth.Issued) (*auth.Principal, auth.Reason, map[string]int) {
		t.Helper()
		cred, ok := auth.ParseCredential(token.Full)
		require.True(t, ok)
		rec.take()
		s, err := st.SessionForAuth(ctx, token.PublicID)
		require.NoError(t, err)
		if s == nil {
			return nil, auth.ReasonUnknown, nil
		}
		p, reason := s.Check(cred, time.Now())
		return p, reason, rowsReadFrom(t, dbURL, rec.take())
	}

	one, oneSent := open(held[7:8])
	whole, wholeSent := open(held)
	require.Equal(t, oneSent, wholeSent, "statements sent to open a token of one restaurant and of the whole key")
	// BEGIN, the key's lock, the check that it still holds the grants, the
	// expired sessions' clean-up, the session, its grants, COMMIT.
	require.Equal(t, 7, wholeSent)
	require.Len(t, checks, 1)
	checked := rowsReadFrom(t, dbURL, checks)
	require.Zero(t, checked["key_grants"], "the whole key's token is checked against its summary, not grant by grant")
	require.Equal(t, 3, checked["key_grant_sets"], "the key's two scope sets, and the first of them again for whether it has a summary")

	p, reason, read := resolve(whole)
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, held, p.Grants(), "the whole key's grants")
	require.Zero(t, read["session_grants"]+read["key_grants"], "no row per grant")
	require.Equal(t, 2, read["session_grant_sets"], "the token's two scope sets")
	_, reason, read = resolve(one)
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, 1, read["session_grant_sets"])

	// Narrowed to one scope, both sets of the key are one set of the token.
	var areasWrite []auth.Grant
	for _, g := range held {
		areasWrite = append(areasWrite, auth.Grant{RestaurantID: g.RestaurantID, Scopes: []string{"areas:write"}})
	}
	writer, _ := open(areasWrite)
	p, reason, read = resolve(writer)
	require.Equal(t, auth.Reason(""), reason)
	require.Equal(t, areasWrite, p.Grants())
	require.Equal(t, 1, read["session_grant_sets"])

	// A hand edit removing one grant of the middle restaurant refuses the
	// whole-key token at once, not the token narrowed to areas:write;
	// putting it back lets the token work again (only `keys ungrant`
	// kills a token for good).
	_, err = conn.Exec(ctx, `DELETE FROM key_grants WHERE key_id = $1 AND restaurant_id = 'r0151' AND scope = 'suppliers:read'`, keyID)
	require.NoError(t, err)
	_, reason, _ = resolve(whole)
	require.Equal(t, auth.ReasonGrantsChanged, reason)
	_, reason, _ = resolve(writer)
	require.Equal(t, auth.Reason(""), reason)
	_, err = conn.Exec(ctx, `INSERT INTO key_grants (key_id, restaurant_id, scope) VALUES ($1, 'r0151', 'suppliers:read')`, keyID)
	require.NoError(t, err)
	_, reason, _ = resolve(whole)
	require.Equal(t, auth.Reason(""), reason)

	// `keys ungrant` of one scope of the middle restaurant deletes the
	// tokens carrying it, and granting it again does not bring them back;
	// the token of r0007 and the areas:write token live on.
	_, err = st.KeyUngrant(ctx, key.PublicID, auth.Grant{RestaurantID: "r0151", Scopes: []string{"suppliers:read"}})
	require.NoError(t, err)
	require.NoError(t, st.KeyGrant(ctx, key.PublicID, []auth.Grant{{RestaurantID: "r0151", Scopes: []string{"suppliers:read"}}}))
	_, reason, _ = resolve(whole)
	require.Equal(t, auth.ReasonUnknown, reason, "deleted with the grant it carried")
	for _, token := range []auth.Issued{one, writer} {
		_, reason, _ = resolve(token)
		require.Equal(t, auth.Reason(""), reason)
	}
	// Removing all of r0007 kills every token carrying any of its scopes.
	_, err = st.KeyUngrant(ctx, key.PublicID, auth.Grant{RestaurantID: "r0007"})
	require.NoError(t, err)
	for _, token := range []auth.Issued{one, writer} {
		_, reason, _ = resolve(token)
		require.Equal(t, auth.ReasonUnknown, reason)
	}
}
