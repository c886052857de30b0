package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// Every refused credential is the same 401 with a Bearer challenge; the
// body does not tell an unknown key from a revoked, expired or grant-less one.
func TestUnauthorizedMatrix(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	k := a.newRefusedKeys()
	good := k.good
	unknown := auth.NewKey().Full

	cases := map[string]struct {
		header    string
		challenge string
		detail    string
	}{
		"missing header":       {"", `Bearer realm="foodsafe"`, "Send the API key"},
		"basic scheme":         {"Basic dXNlcjpwYXNz", `error="invalid_token"`, "not one `Bearer <key>`"},
		"bearer without key":   {"Bearer ", `error="invalid_token"`, "not one `Bearer <key>`"},
		"garbage":              {"Bearer not-a-key", `error="invalid_token"`, "not one `Bearer <key>`"},
		"wrong prefix":         {"Bearer fsx_" + strings.TrimPrefix(good, "fsk_"), `error="invalid_token"`, "not one `Bearer <key>`"},
		"short public id":      {"Bearer fsk_abc." + secretOf(good), `error="invalid_token"`, "not one `Bearer <key>`"},
		"truncated secret":     {"Bearer " + good[:len(good)-1], `error="invalid_token"`, "not one `Bearer <key>`"},
		"unknown key":          {"Bearer " + unknown, `error="invalid_token"`, "unknown, revoked, expired"},
		"wrong secret":         {"Bearer " + k.wrongSecret, `error="invalid_token"`, "unknown, revoked, expired"},
		"revoked key":          {"Bearer " + k.revoked, `error="invalid_token"`, "unknown, revoked, expired"},
		"expired key":          {"Bearer " + k.expired, `error="invalid_token"`, "unknown, revoked, expired"},
		"key without grants":   {"Bearer " + k.noGrants, `error="invalid_token"`, "unknown, revoked, expired"},
		"session-token prefix": {"Bearer fst_" + strings.TrimPrefix(unknown, "fsk_"), `error="invalid_token"`, "unknown, revoked, expired"},
	}
	var bodies []string
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			r := a.do(req{Path: "/v1/restaurants", Header: h})
			p := requireProblem(t, r, http.StatusUnauthorized, "unauthorized")
			require.Contains(t, r.Header.Get("WWW-Authenticate"), "Bearer")
			require.Contains(t, r.Header.Get("WWW-Authenticate"), tc.challenge)
			require.Contains(t, p.Detail, tc.detail)
			require.Equal(t, "/v1/restaurants", p.Instance)
			if strings.Contains(tc.detail, "unknown, revoked") {
				bodies = append(bodies, strings.Replace(string(r.Body), p.RequestID, "", 1))
			}
		})
	}
	for _, b := range bodies[1:] {
		require.Equal(t, bodies[0], b, "unknown, revoked, expired and grant-less keys answer identically")
	}
	require.Equal(t, http.StatusOK, a.getAs(good, "/v1/restaurants").Status, "the good key works")
}

func TestRestaurantListSorted(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r2", "r1", "r3")
	key := a.newKey(
		grant("r2", "fryer-checks:read", "deliveries:read", "areas:read"),
		grant("r1", "delivery-images:read", "deliveries:read"),
	)
	r := a.getAs(key, "/v1/restaurants")
	require.Equal(t, http.StatusOK, r.Status)
	require.JSONEq(t, `{"data":[
		{"restaurantId":"r1","scopes":["deliveries:read","delivery-images:read"]},
		{"restaurantId":"r2","scopes":["areas:read","deliveries:read","fryer-checks:read"]}]}`, string(r.Body))
	require.Equal(t, "application/json; charset=utf-8", r.Header.Get("Content-Type"))
}

// Revocation and grant changes made by another process (here: the store,
// as the CLI does) apply to the very next request: nothing is cached.
func TestRevocationAndGrantChangesApplyImmediately(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "deliveries:read"))
	ctx := context.Background()

	require.Equal(t, http.StatusOK, a.getAs(key, "/v1/restaurants").Status)
	require.NoError(t, a.store().KeyGrant(ctx, publicID(t, key), []auth.Grant{grant("r2", "areas:read")}))
	r := a.getAs(key, "/v1/restaurants")
	require.Contains(t, string(r.Body), `"restaurantId":"r2"`)

	_, err := a.store().KeyUngrant(ctx, publicID(t, key), auth.Grant{RestaurantID: "r2"})
	require.NoError(t, err)
	require.NotContains(t, string(a.getAs(key, "/v1/restaurants").Body), `"r2"`)

	_, err = a.store().KeyRevoke(ctx, publicID(t, key))
	require.NoError(t, err)
	requireProblem(t, a.getAs(key, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
}

// The secret half of a key never reaches logs, audit rows or problem bodies.
func TestSecretNeverLeaks(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:read"))
	secret := secretOf(key)
	revoked := a.newKey(grant("r1", "deliveries:read"))
	_, err := a.store().KeyRevoke(context.Background(), publicID(t, revoked))
	require.NoError(t, err)

	var bodies []string
	for _, k := range []string{key, revoked, key + "x", strings.Replace(key, "fsk_", "fsx_", 1)} {
		for _, path := range []string{"/v1/restaurants", "/v1/nope", "/health/live"} {
			bodies = append(bodies, string(a.getAs(k, path).Body))
		}
	}
	require.NoError(t, a.svc.Audit.Close(context.Background()))
	for _, b := range bodies {
		require.NotContains(t, b, secret)
		require.NotContains(t, b, secretOf(revoked))
	}
	require.NotContains(t, a.logs.String(), secret)
	require.NotContains(t, a.logs.String(), secretOf(revoked))
	require.Contains(t, a.logs.String(), publicID(t, key), "the public id is what identifies the key in logs")

	var leaked int
	err = a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events e WHERE strpos(e::text, $1) > 0 OR strpos(e::text, $2) > 0`,
		secret, secretOf(revoked)).Scan(&leaked)
	require.NoError(t, err)
	require.Zero(t, leaked)
}

func TestCredentialParsing(t *testing.T) {
	t.Parallel()
	k := auth.NewKey()
	require.Regexp(t, `^fsk_[a-z0-9]{16}\.[A-Za-z0-9_-]{43}$`, k.Full)
	c, ok := auth.ParseCredential(k.Full)
	require.True(t, ok)
	require.Equal(t, k.PublicID, c.PublicID)
	require.True(t, c.Matches(k.Digest))
	require.False(t, c.Matches(auth.NewKey().Digest))
	require.NotEqual(t, k.Full, auth.NewKey().Full)

	for _, bad := range []string{
		"", "fsk_", "fsk_.", k.Full + "=", "FSK_" + k.Full[4:], strings.Replace(k.Full, ".", "", 1),
		strings.Replace(k.Full, ".", "..", 1), "fsk_ABCDEFGHIJKLMNOP." + k.Full[len(k.Full)-43:],
		k.Full[:len(k.Full)-43] + strings.Repeat("+", 43),
	} {
		_, ok := auth.ParseCredential(bad)
		require.False(t, ok, bad)
	}
	for h, want := range map[string]string{"Bearer x": "x", "bearer x": "x", "BEARER  x": "x"} {
		got, ok := auth.BearerCredential(h)
		require.True(t, ok, h)
		require.Equal(t, want, got)
	}
	for _, h := range []string{"Bearer", "Bearer ", "Token x", "x"} {
		_, ok := auth.BearerCredential(h)
		require.False(t, ok, h)
	}
}
