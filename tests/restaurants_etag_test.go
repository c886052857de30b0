package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/auth"
)

// GET /v1/restaurants carries an ETag naming the key's grants: sent back
// as If-None-Match it is answered 304 without a body (plain, weak,
// compressed, in a list), and any change of the grants (a restaurant
// given, a scope added, a restaurant taken back) makes the list 200 again
// with another tag. Keys with other grants have other tags; the same
// grants, the same tag.
func TestRestaurantsListNotModified(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	key := a.newKey(grant("r1", "deliveries:read", "areas:read"))
	same := a.newKey(grant("r1", "areas:read", "deliveries:read"))
	other := a.newKey(grant("r1", "areas:read"))
	ctx := context.Background()

	first := a.getAs(key, "/v1/restaurants")
	require.Equal(t, http.StatusOK, first.Status)
	tag := first.Header.Get("ETag")
	require.Regexp(t, `^"g[0-9a-f]{32}"$`, tag)
	require.Equal(t, tag, a.getAs(same, "/v1/restaurants").Header.Get("ETag"), "the tag follows the grants, not the key")
	require.NotEqual(t, tag, a.getAs(other, "/v1/restaurants").Header.Get("ETag"))

	for _, inm := range []string{tag, "W/" + tag, `"x", ` + tag, "*", strings.TrimSuffix(tag, `"`) + `-gzip"`} {
		r := a.getAs(key, "/v1/restaurants", "If-None-Match", inm)
		require.Equal(t, http.StatusNotModified, r.Status, inm)
		require.Empty(t, r.Body, inm)
		require.NotEmpty(t, r.Header.Get("ETag"), inm)
	}
	for _, inm := range []string{`"x"`, strings.Trim(tag, `"`), tag[:len(tag)-2] + `"`} {
		r := a.getAs(key, "/v1/restaurants", "If-None-Match", inm)
		require.Equal(t, http.StatusOK, r.Status, inm)
		require.Equal(t, tag, r.Header.Get("ETag"), inm)
	}

	// Compressed, the tag names the coding; either form revalidates.
	zipped := a.getAs(key, "/v1/restaurants", "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, zipped.Status)
	if zipped.Header.Get("Content-Encoding") == "gzip" {
		require.Equal(t, strings.TrimSuffix(tag, `"`)+`-gzip"`, zipped.Header.Get("ETag"))
	}
	require.Equal(t, http.StatusNotModified, a.getAs(key, "/v1/restaurants", "Accept-Encoding", "gzip", "If-None-Match", zipped.Header.Get("ETag")).Status)

	// Every change of the grants changes the list, and so its tag.
	seen := map[string]bool{tag: true}
	changed := func(what string) {
		t.Helper()
		r := a.getAs(key, "/v1/restaurants", "If-None-Match", tag)
		require.Equal(t, http.StatusOK, r.Status, what)
		next := r.Header.Get("ETag")
		require.False(t, seen[next], what)
		seen[next] = true
		require.Equal(t, http.StatusNotModified, a.getAs(key, "/v1/restaurants", "If-None-Match", next).Status, what)
		tag = next
	}
	require.NoError(t, a.store().KeyGrant(ctx, publicID(t, key), []auth.Grant{grant("r2", "areas:read")}))
	changed("a restaurant given")
	require.NoError(t, a.store().KeyGrant(ctx, publicID(t, key), []auth.Grant{grant("r2", "cooling:read")}))
	changed("a scope added")
	_, err := a.store().KeyUngrant(ctx, publicID(t, key), auth.Grant{RestaurantID: "r1"})
	require.NoError(t, err)
	changed("a restaurant taken back")
}
