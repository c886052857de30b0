package httpapi

import "github.com/gin-gonic/gin"

// route is one entry of the route table: the single list that registers
// handlers (and, later, documents them).
type route struct {
	Method   string
	Path     string
	Handlers []gin.HandlerFunc
}

// routes is the route table of the service.
func (a *API) routes() []route {
	return []route{
		{Method: "GET", Path: "/health/live", Handlers: []gin.HandlerFunc{a.healthLive}},
		{Method: "GET", Path: "/health/ready", Handlers: []gin.HandlerFunc{a.healthReady}},
		{Method: "GET", Path: "/health/version", Handlers: []gin.HandlerFunc{a.healthVersion}},
	}
}
