package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// restaurantsList is GET /v1/restaurants (spec 4.2): the grants of the key,
// restaurants and scopes sorted. It needs no query: the principal holds them.
func (a *API) restaurantsList(c *gin.Context) error {
	return respondList(c, restaurantGrants(principal(c).Grants()))
}

func restaurantGrants(grants []auth.Grant) []wire.RestaurantGrant {
	out := make([]wire.RestaurantGrant, len(grants))
	for i, g := range grants {
		out[i] = wire.RestaurantGrant{RestaurantID: g.RestaurantID, Scopes: g.Scopes}
	}
	return out
}
