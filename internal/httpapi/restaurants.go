package httpapi

import (
	"context"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// restaurantsList is GET /v1/restaurants (spec 4.2; tool
// list_restaurants): the grants of the key, restaurants and scopes sorted.
// It needs no query: the principal holds them.
func (a *API) restaurantsList(_ context.Context, r request) (List[wire.RestaurantGrant], error) {
	return List[wire.RestaurantGrant]{Data: restaurantGrants(r.principal.Grants())}, nil
}

func restaurantGrants(grants []auth.Grant) []wire.RestaurantGrant {
	out := make([]wire.RestaurantGrant, len(grants))
	for i, g := range grants {
		out[i] = wire.RestaurantGrant{RestaurantID: g.RestaurantID, Scopes: g.Scopes}
	}
	return out
}
