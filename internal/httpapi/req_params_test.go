package httpapi

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// A page size is plain digits within the bounds; every other spelling of
// a number is refused rather than guessed at.
func TestParseLimit(t *testing.T) {
	for _, ok := range []int{wire.MinLimit, 50, wire.MaxLimit} {
		n, err := parseLimit(strconv.Itoa(ok))
		require.NoError(t, err)
		require.Equal(t, ok, n)
	}
	for _, bad := range []string{"", "0", strconv.Itoa(wire.MinLimit - 1), strconv.Itoa(wire.MaxLimit + 1),
		"050", "+5", "-5", " 5", "5 ", "5.0", "1e2", "0x10", "ten", "99999999999999999999"} {
		_, err := parseLimit(bad)
		require.True(t, apperr.Is(err, apperr.Invalid), "%q: %v", bad, err)
	}
}

// A session's grants are the key's, narrowed to one restaurant and/or to
// scopes; asking beyond the key is 403, for a restaurant it lacks the one
// 404, for an unknown scope 400.
func TestNarrow(t *testing.T) {
	p := auth.NewPrincipal(1, "pub", []auth.Grant{
		{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write", "users:write"}},
		{RestaurantID: "r2", Scopes: []string{"areas:write"}},
	})
	r1, r3 := "r1", "r3"
	for _, c := range []struct {
		name string
		req  sessionRequest
		want []auth.Grant
		code apperr.Code
	}{
		{"everything", sessionRequest{}, p.Grants(), ""},
		{"one restaurant", sessionRequest{RestaurantID: &r1},
			[]auth.Grant{{RestaurantID: "r1", Scopes: []string{"areas:read", "areas:write", "users:write"}}}, ""},
		{"scopes everywhere", sessionRequest{Scopes: []string{"areas:write"}},
			[]auth.Grant{{RestaurantID: "r1", Scopes: []string{"areas:write"}}, {RestaurantID: "r2", Scopes: []string{"areas:write"}}}, ""},
		{"scopes of one restaurant", sessionRequest{RestaurantID: &r1, Scopes: []string{"users:write"}},
			[]auth.Grant{{RestaurantID: "r1", Scopes: []string{"users:write"}}}, ""},
		{"a restaurant the key lacks", sessionRequest{RestaurantID: &r3}, nil, apperr.NotFound},
		{"a scope the key lacks", sessionRequest{Scopes: []string{"products:write"}}, nil, apperr.Forbidden},
		{"a scope held elsewhere only", sessionRequest{RestaurantID: &r1, Scopes: []string{"areas:write", "users:read"}}, nil, apperr.Forbidden},
		{"an unknown scope", sessionRequest{Scopes: []string{"areas:delete"}}, nil, apperr.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := narrow(p, c.req)
			if c.code != "" {
				require.True(t, apperr.Is(err, c.code), "want %s, got %v", c.code, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}
