package tests

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/testdb"
)

// A key's lookup reads its own grants by key_grants_pkey, however much
// larger another key is: one key of 2,000 restaurants x 25 scopes (50,000
// grant rows) beside two keys of one grant, ANALYZEd and not vacuumed (the
// state right after `keys create`). ANALYZE then sees three distinct key
// ids and estimated a third of the table for any key, at which a scan of
// every entry of key_grants_restaurant_idx filtered on key_id looked as
// cheap, and the small key's lookup read every grant of the large one.
// Migration 00024 (n_distinct on key_id) keeps the primary key; without it
// this test fails.
func TestKeyLookupPlanBesideALargeKey(t *testing.T) {
	t.Parallel()
	dbURL := testdb.URL(t)
	execSQL(t, dbURL, `INSERT INTO restaurants (id) SELECT 'r' || lpad(g::text, 6, '0') FROM generate_series(0, 1999) g`)
	secret := sha256.Sum256([]byte("secret"))
	execSQL(t, dbURL, `INSERT INTO api_keys (public_id, secret_sha256, label)
		VALUES ('largekeyplan0001', $1, 'large'), ('smallkeyplan0001', $1, 'small'), ('smallkeyplan0002', $1, 'small')`, secret[:])
	execSQL(t, dbURL, `INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT k.id, r.id, 's' || chr(96 + g) || ':read'
		FROM api_keys k, restaurants r, generate_series(1, 25) g WHERE k.label = 'large'`)
	execSQL(t, dbURL, `INSERT INTO key_grants (key_id, restaurant_id, scope)
		SELECT k.id, 'r000001', 'areas:read' FROM api_keys k WHERE k.label = 'small'`)
	execSQL(t, dbURL, `ANALYZE`)

	st, rec := recordingStore(t, dbURL)
	ctx := context.Background()
	for _, key := range []string{"smallkeyplan0001", "largekeyplan0001"} {
		_, err := st.KeyForAuth(ctx, key)
		require.NoError(t, err)
		var lookup *sentQuery
		for _, q := range rec.take() {
			if m := queryName.FindStringSubmatch(q.SQL); m != nil && m[1] == "KeyAuthLookup" {
				lookup = &q
			}
		}
		require.NotNil(t, lookup, "%s: KeyAuthLookup did not run", key)
		for _, generic := range []bool{false, true} {
			plan := explain(t, dbURL, *lookup, generic)
			requirePlanReads(t, plan, []string{"api_keys_public_id_key", "key_grant_sets_pkey", "key_grants_pkey"}, false, "%s, generic=%v", key, generic)
		}
	}
}
