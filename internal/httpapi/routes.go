package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// access says who may call a route and how it is rate limited.
type access int

const (
	// accessHealth: no authentication, never rate limited.
	accessHealth access = iota
	// accessOpen: no authentication, limited per client IP.
	accessOpen
	// accessPartner: bearer key (or session token), limited per key.
	accessPartner
)

// route is one entry of the route table: the single list that registers
// handlers (and documents them).
type route struct {
	Method string
	Path   string
	Access access
	// Need, for routes under /v1/restaurants/:restaurantId, names the scopes
	// the request needs on that restaurant.
	Need    needFunc
	Handler gin.HandlerFunc
}

// routes is the route table of the service.
func (a *API) routes() []route {
	return []route{
		{Method: "GET", Path: "/health/live", Access: accessHealth, Handler: a.healthLive},
		{Method: "GET", Path: "/health/ready", Access: accessHealth, Handler: a.healthReady},
		{Method: "GET", Path: "/health/version", Access: accessHealth, Handler: a.healthVersion},

		{Method: "GET", Path: "/v1/restaurants", Access: accessPartner, Handler: a.restaurantsList},

		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead), Handler: a.deliveriesList},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries/:deliveryId", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead), Handler: a.deliveryGet},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId", Access: accessPartner,
			Need: scopes(catalog.DeliveriesWrite), Handler: a.deliveryPut},

		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections", Access: accessPartner,
			Need: scopes(), Handler: a.collectionsList},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records", Access: accessPartner,
			Need: collectionScope("read"), Handler: a.recordsWalk},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records/:recordId", Access: accessPartner,
			Need: collectionScope("read"), Handler: a.recordGet},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/mutations/:mutationId",
			Access: accessPartner, Need: collectionScope("write"), Handler: a.recordPut},

		{Method: "GET", Path: "/v1/restaurants/:restaurantId/collections/:collection/records/:recordId/assets", Access: accessPartner,
			Need: collectionScope("read"), Handler: a.assetsList},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/collections/:collection/records/:recordId/asset", Access: accessPartner,
			Need: collectionScope("write"), Handler: a.assetPut},
		{Method: "GET", Path: "/v1/restaurants/:restaurantId/deliveries/:deliveryId/images", Access: accessPartner,
			Need: scopes(catalog.DeliveriesRead, catalog.DeliveryImagesRead), Handler: a.deliveryImagesList},
		{Method: "PUT", Path: "/v1/ingest/restaurants/:restaurantId/deliveries/:deliveryId/images/:imageId", Access: accessPartner,
			Need: scopes(catalog.DeliveryImagesWrite), Handler: a.deliveryImagePut},
		{Method: "GET", Path: "/v1/files/:restaurantId/:sha256", Access: accessOpen, Handler: a.fileGet},
		{Method: "HEAD", Path: "/v1/files/:restaurantId/:sha256", Access: accessOpen, Handler: a.fileGet},

		{Method: "POST", Path: "/v1/mobile/sessions", Access: accessPartner, Handler: a.sessionCreate},
	}
}

// chain is the handler list of a route: access control, then the handler.
func (a *API) chain(r route) []gin.HandlerFunc {
	var hs []gin.HandlerFunc
	switch r.Access {
	case accessOpen:
		hs = append(hs, a.limitOpen)
	case accessPartner:
		hs = append(hs, a.authenticate)
		if r.Need != nil {
			hs = append(hs, a.authorize(r.Need))
		}
	}
	return append(hs, r.Handler)
}
