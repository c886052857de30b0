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

// sessionBundle is what each TestMobileSessions case starts from: an app
// on a clock the case moves, three restaurants, and a device key holding
// grants on two of them.
type sessionBundle struct {
	a      *app
	device string
	mu     sync.Mutex
	now    time.Time
}

// advance moves the app's clock forward by d.
func (b *sessionBundle) advance(d time.Duration) {
	b.mu.Lock()
	b.now = b.now.Add(d)
	b.mu.Unlock()
}

func (b *sessionBundle) clock() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

// open opens a session with body and decodes it, requiring a 200.
func (b *sessionBundle) open(t *testing.T, key string, body any) sessionDoc {
	t.Helper()
	r := b.a.openSession(key, body)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var s sessionDoc
	r.JSON(t, &s)
	return s
}

func TestMobileSessions(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *sessionBundle {
		t.Helper()
		b := &sessionBundle{now: time.UnixMilli(1_800_000_000_000)}
		b.a = newApp(t, withClock(b.clock))
		b.a.addRestaurants("r1", "r2", "r3")
		b.device = b.a.newKey(grant("r1", "areas:write", "areas:read", "products:write"), grant("r2", "areas:write"))
		return b
	}

	t.Run("a token works wherever its key does and is stored only as a digest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		r := a.openSession(b.device, nil)
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
	})

	t.Run("narrowed tokens carry exactly what was asked", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		narrow := b.open(t, b.device, map[string]any{"restaurantId": "r1", "scopes": []string{"areas:write"}})
		require.JSONEq(t, `[{"restaurantId":"r1","scopes":["areas:write"]}]`, string(mustJSON(t, narrow.Restaurants)))
		a.put(narrow.AccessToken, "r1", "areas", "a2", "m2", area("Bar"))
		requireProblem(t, a.getAs(narrow.AccessToken, recordsPath("r1", "areas")), http.StatusForbidden, "forbidden")
		requireProblem(t, a.getAs(narrow.AccessToken, recordsPath("r2", "areas")), http.StatusNotFound, "not-found")
		r := a.openSession(b.device, map[string]any{"scopes": []string{"areas:write"}})
		r.JSON(t, &narrow)
		require.JSONEq(t, `[{"restaurantId":"r1","scopes":["areas:write"]},{"restaurantId":"r2","scopes":["areas:write"]}]`, string(mustJSON(t, narrow.Restaurants)))
	})

	t.Run("never more than the key", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, device := b.a, b.device
		// A restaurant without a grant is the one 404 (spec 5.3), whether
		// or not it exists.
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
	})

	t.Run("a body over the limit is 413", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		big := `{"restaurantId":"` + strings.Repeat("x", 1<<20) + `"}`
		r := b.a.do(req{Method: http.MethodPost, Path: "/v1/mobile/sessions",
			Header: map[string]string{"Authorization": "Bearer " + b.device, "Content-Type": "application/json"},
			Body:   strings.NewReader(big)})
		requireProblem(t, r, http.StatusRequestEntityTooLarge, "payload-too-large")
	})

	t.Run("only device keys open sessions, and not with a token", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		tok := b.open(t, b.device, nil).AccessToken
		reader := a.newKey(grant("r1", "areas:read"))
		requireProblem(t, a.openSession(reader, nil), http.StatusForbidden, "forbidden")
		requireProblem(t, a.openSession(tok, nil), http.StatusForbidden, "forbidden")
		requireProblem(t, a.openSession("", nil), http.StatusUnauthorized, "unauthorized")
	})

	t.Run("tokens die when their grants shrink, when the key is revoked, and when they expire", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a, device := b.a, b.device
		tok := b.open(t, device, nil).AccessToken
		require.Equal(t, http.StatusOK, a.getAs(tok, "/v1/restaurants").Status)
		// Only tokens carrying the lost grant die.
		r2Only := b.open(t, device, map[string]any{"restaurantId": "r2"})
		_, err := a.store().KeyUngrant(context.Background(), publicID(t, device), auth.Grant{RestaurantID: "r1", Scopes: []string{"products:write"}})
		require.NoError(t, err)
		requireProblem(t, a.getAs(tok, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		require.Equal(t, http.StatusOK, a.getAs(r2Only.AccessToken, "/v1/restaurants").Status, "unaffected by r1's change")

		b.advance(time.Hour)
		requireProblem(t, a.getAs(r2Only.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")

		fresh := b.open(t, device, nil)
		require.Equal(t, http.StatusOK, a.getAs(fresh.AccessToken, "/v1/restaurants").Status)
		_, err = a.store().KeyRevoke(context.Background(), publicID(t, device))
		require.NoError(t, err)
		requireProblem(t, a.getAs(fresh.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	})

	t.Run("a token never outlives its key", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		exp := b.clock().Add(10 * time.Minute)
		shortKey := a.newKeyExpiring(&exp, grant("r1", "areas:write"))
		var short sessionDoc
		a.openSession(shortKey, nil).JSON(t, &short)
		require.Equal(t, "1800000600000", short.ExpiresAt)
	})

	t.Run("garbage and forged tokens are 401", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		// The forgery keeps the public half of a token that works (its
		// key is live) and changes one character of the secret, so the
		// 401 can only come from the secret.
		tok := b.open(t, b.device, nil).AccessToken
		requireProblem(t, a.getAs(auth.NewToken().Full, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		require.Equal(t, http.StatusOK, a.getAs(tok, "/v1/restaurants").Status, "the genuine token works")
		last := tok[len(tok)-1]
		swap := byte('A')
		if last == 'A' {
			swap = 'B'
		}
		forged := tok[:len(tok)-1] + string(swap)
		requireProblem(t, a.getAs(forged, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
		require.Equal(t, http.StatusOK, a.getAs(tok, "/v1/restaurants").Status, "the genuine token still works after the forgery")
	})

	t.Run("audit rows name the key behind a token", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		a := b.a
		tok := b.open(t, b.device, nil).AccessToken
		a.put(tok, "r1", "areas", "a1", "m1", area("Kitchen"))
		narrow := b.open(t, b.device, map[string]any{"restaurantId": "r1", "scopes": []string{"areas:write"}})
		a.put(narrow.AccessToken, "r1", "areas", "a2", "m2", area("Bar"))
		require.NoError(t, a.svc.Audit.Close(context.Background()))
		var n int
		require.NoError(t, a.store().Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM audit_events WHERE key_public_id = $1 AND route LIKE '/v1/ingest/%'`, publicID(t, b.device)).Scan(&n))
		require.GreaterOrEqual(t, n, 2)
	})
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
	_, err := a.store().KeyUngrant(ctx, publicID(t, device), auth.Grant{RestaurantID: "r1", Scopes: []string{"areas:write"}})
	require.NoError(t, err)
	requireProblem(t, a.getAs(narrowed.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	require.NoError(t, a.store().KeyGrant(ctx, publicID(t, device), []auth.Grant{grant("r1", "areas:write")}))
	requireProblem(t, a.getAs(narrowed.AccessToken, "/v1/restaurants"), http.StatusUnauthorized, "unauthorized")
	requireProblem(t, a.ingest(narrowed.AccessToken, "r1", "areas", "a2", "m2", snapshot("r1", "a2", "m2", 1, false, area("Bar"))),
		http.StatusUnauthorized, "unauthorized")
	require.Equal(t, http.StatusOK, a.getAs(other.AccessToken, "/v1/restaurants").Status, "a token without the scope lives on")
	require.Equal(t, http.StatusOK, a.getAs(device, "/v1/restaurants").Status)
}
