package httpapi

import (
	"context"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// restaurantsList is GET /v1/restaurants (spec 4.2; tool
// list_restaurants): the grants of the key, restaurants and scopes sorted.
// It needs no query: the principal holds them, sorted once. Over REST the
// list is written as it goes (wire.RestaurantList.WriteJSON): a key of
// 20,000 restaurants is 11 MB of JSON, never held whole.
func (a *API) restaurantsList(_ context.Context, r request) (wire.RestaurantList, error) {
	return wire.RestaurantList{Data: restaurantGrants(r.principal.Grants())}, nil
}

func restaurantGrants(grants []auth.Grant) []wire.RestaurantGrant {
	out := make([]wire.RestaurantGrant, len(grants))
	for i, g := range grants {
		out[i] = wire.RestaurantGrant{RestaurantID: g.RestaurantID, Scopes: g.Scopes}
	}
	return out
}
