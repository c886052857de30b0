package tests

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

type sessionDoc struct {
	AccessToken string `json:"accessToken"`
	TokenType   string `json:"tokenType"`
	ExpiresAt   string `json:"expiresAt"`
	Restaurants []struct {
		RestaurantID string   `json:"restaurantId"`
		Scopes       []string `json:"scopes"`
	} `json:"restaurants"`
}

func (a *app) openSession(key string, body any) response {
	a.t.Helper()
	if body == nil {
		return a.do(req{Method: http.MethodPost, Path: "/v1/mobile/sessions", Header: map[string]string{"Authorization": "Bearer " + key}})
	}
	return a.do(req{Method: http.MethodPost, Path: "/v1/mobile/sessions",
		Header: map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		Body:   strings.NewReader(string(mustJSON(a.t, body)))})
}

func TestMobileSessions(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	a := newApp(t, withClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	a.addRestaurants("r1", "r2", "r3")
	device := a.newKey(grant("r1", "areas:write", "areas:read", "products:write"), grant("r2", "areas:write"))

	r := a.openSession(device, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var s sessionDoc
	r.JSON(t, &s)
	require.Regexp(t, `^fst_[a-z0-9]{16}\.[A-Za-z0-9_-]{43}$`, s.AccessToken)
	require.Equal(t, "Bearer", s.TokenType)
	require.Equal(t, "1800003600000", s.ExpiresAt, "one hour by default")
	require.JSONEq(t, `[{"restaurantId":"r1","scopes":["areas:read","areas:write","products:write"]},{"restaurantId":"r2","scopes":["areas:write"]}]`,
		string(mustJSON(t, s.Restaurants)))

	// The token works wherever the key does: ingest and reads.
	tok := s.AccessToken
	e := a.put(tok, "r1", "areas", "a1", "m1", area("Kitchen"))
	require.Equal(t, "1", e.Sequence)
	require.Equal(t, http.StatusOK, a.getAs(tok, recordsPath("r1", "areas")).Status)
	require.Equal(t, http.StatusOK, a.getAs(tok, "/v1/restaurants").Status)
	// It is stored only as a digest.
	var leaks int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM mobile_sessions s WHERE strpos(s::text, $1) > 0`, secretOf(tok)).Scan(&leaks))
	require.Zero(t, leaks)

	// Narrowed tokens carry exactly what was asked.
	r = a.openSession(device, map[string]any{"restaurantId": "r1", "scopes": []string{"areas:write"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var narrow sessionDoc
	r.JSON(t, &narrow)
	require.JSONEq(t, `[{"restaurantId":"r1","scopes":["areas:write"]}]`, string(mustJSON(t, narrow.Restaurants)))
	a.put(narrow.AccessToken, "r1", "areas", "a2", "m2", area("Bar"))
	requireProblem(t, a.getAs(narrow.AccessToken, recordsPath("r1", "areas")), http.StatusForbidden, "forbidden")
	requireProblem(t, a.getAs(narrow.AccessToken, recordsPath("r2", "areas")), http.StatusNotFound, "not-found")
	r = a.openSession(device, map[string]any{"scopes": []string{"areas:write"}})
	r.JSON(t, &narrow)
	require.JSONEq(t, `[{"restaurantId":"r1","scopes":["areas:write"]},{"restaurantId":"r2","scopes":["areas:write"]}]`, string(mustJSON(t, narrow.Restaurants)))

	// Never more than the key; a restaurant without a grant is the one 404
	// (spec 5.3), whether or not it exists.
	ungranted := requireProblem(t, a.openSession(device, map[string]any{"restaurantId": "r3"}), http.StatusNotFound, "not-found")
	missing := requireProblem(t, a.openSession(device, map[string]any{"restaurantId": "nowhere"}), http.StatusNotFound, "not-found")
	require.Equal(t, ungranted.Detail, missing.Detail)
	for name, body := range map[string]map[string]any{
		"scope not held":       {"scopes": []string{"deliveries:read"}},
		"scope not held there": {"restaurantId": "r2", "scopes": []string{"products:write"}},
	} {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, a.openSession(device, body), http.StatusForbidden, "forbidden")
		})
	}
	for name, body := range map[string]any{
		"unknown scope":   map[string]any{"scopes": []string{"areas:delete"}},
		"unknown member":  map[string]any{"ttl": 99999},
		"empty scopes":    map[string]any{"scopes": []string{}},
		"bad restaurant":  map[string]any{"restaurantId": "-x"},
		"not an object":   []string{"areas:write"},
		"duplicate scope": map[string]any{"scopes": []string{"areas:write", "areas:write"}},
	} {
		t.Run(name, func(t *testing.T) {
			requireProblem(t, a.openSession(device, body), http.StatusBadRequest, "invalid-request")
		})
	}

	// Only device keys, and not with a token.
	reader := a.newKey(grant("r1", "areas:read"))
	requireProblem(t, a.openSession(reader, nil), http.StatusForbidden, "forbidden")
	requireProblem(t, a.openSession(tok, nil), http.StatusForbidden, "forbidden")
	requireProblem(t, a.openSession("", nil), http.StatusUnauthorized, "unauthorized")

	// Tokens die when their grants shrink (only tokens carrying the lost
	// grant), when the key is revoked, and when they expire.
	r = a.openSession(device, map[string]any{"restaurantId": "r2"})
	var r2Only sessionDoc
	r.JSON(t, &r2Only)
	_, err := a.store().KeyUngrant(context.Background(), publicID(t, device), "r1", []string{"products:write"})
	require.NoError(t, err)
	requireProblem(t, a.getAs(tok, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.Equal(t, http.StatusOK, a.getAs(r2Only.AccessToken, "/v1/restaurants").Status, "unaffected by r1's change")

	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	requireProblem(t, a.getAs(r2Only.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")

	r = a.openSession(device, nil)
	var fresh sessionDoc
	r.JSON(t, &fresh)
	require.Equal(t, http.StatusOK, a.getAs(fresh.AccessToken, "/v1/restaurants").Status)
	_, err = a.store().KeyRevoke(context.Background(), publicID(t, device))
	require.NoError(t, err)
	requireProblem(t, a.getAs(fresh.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")

	// A token never outlives its key.
	exp := now.Add(10 * time.Minute)
	shortKey := a.newKeyExpiring(&exp, grant("r1", "areas:write"))
	var short sessionDoc
	a.openSession(shortKey, nil).JSON(t, &short)
	require.Equal(t, "1800004200000", short.ExpiresAt)

	// Garbage and forged tokens are 401. The forgery keeps the public half
	// of a token that works (its key is live) and changes one character
	// of the secret, so the 401 can only come from the secret.
	requireProblem(t, a.getAs(auth.NewToken().Full, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.Equal(t, http.StatusOK, a.getAs(short.AccessToken, "/v1/restaurants").Status, "the genuine token works")
	last := short.AccessToken[len(short.AccessToken)-1]
	swap := byte('A')
	if last == 'A' {
		swap = 'B'
	}
	forged := short.AccessToken[:len(short.AccessToken)-1] + string(swap)
	requireProblem(t, a.getAs(forged, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")

	// Audit rows name the key behind a token.
	require.NoError(t, a.svc.Audit.Close(context.Background()))
	var n int
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM audit_events WHERE key_public_id = $1 AND route LIKE '/v1/ingest/%'`, publicID(t, device)).Scan(&n))
	require.GreaterOrEqual(t, n, 2)
}

// A token that lost a grant is dead for good: granting the scope again
// does not bring it back, while a token that never carried the scope is
// untouched.
func TestSessionLosingAGrantStaysDead(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	device := a.newKey(grant("r1", "areas:write", "products:write"))
	var narrowed, other sessionDoc
	r := a.openSession(device, map[string]any{"restaurantId": "r1", "scopes": []string{"areas:write"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r.JSON(t, &narrowed)
	r = a.openSession(device, map[string]any{"scopes": []string{"products:write"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r.JSON(t, &other)
	a.put(narrowed.AccessToken, "r1", "areas", "a1", "m1", area("Kitchen"))

	ctx := context.Background()
	_, err := a.store().KeyUngrant(ctx, publicID(t, device), "r1", []string{"areas:write"})
	require.NoError(t, err)
	requireProblem(t, a.getAs(narrowed.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.NoError(t, a.store().KeyGrant(ctx, publicID(t, device), []auth.Grant{grant("r1", "areas:write")}))
	requireProblem(t, a.getAs(narrowed.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	requireProblem(t, a.ingest(narrowed.AccessToken, "r1", "areas", "a2", "m2", snapshot("r1", "a2", "m2", 1, false, area("Bar"))),
		http.StatusUnauthorized, "unauthorized")
	require.Equal(t, http.StatusOK, a.getAs(other.AccessToken, "/v1/restaurants").Status, "a token without the scope lives on")
	require.Equal(t, http.StatusOK, a.getAs(device, "/v1/restaurants").Status)
}
