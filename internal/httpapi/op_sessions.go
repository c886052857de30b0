package httpapi

import (
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/auth"
	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/validate"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// sessionRequest is the optional body of POST /v1/mobile/sessions.
type sessionRequest struct {
	RestaurantID *string  `json:"restaurantId"`
	Scopes       []string `json:"scopes"`
}

// sessionCreate is POST /v1/mobile/sessions (spec 4.5): a device key (one
// holding write scopes) exchanges itself for a short-lived bearer token
// that may narrow, never widen, the key's grants.
func (a *API) sessionCreate(c *gin.Context) error {
	p := principal(c)
	if p.SessionID != 0 {
		return apperr.New(apperr.Forbidden, "A session token cannot open sessions; use the device key.")
	}
	if !holdsWriteScope(p) {
		return apperr.New(apperr.Forbidden, "Only device keys (keys holding write scopes) can open mobile sessions.")
	}
	var req sessionRequest
	if c.Request.ContentLength != 0 {
		body, err := a.readJSON(c)
		if err != nil {
			return err
		}
		if len(body) > 0 {
			doc, errs, err := a.parseBody(body, "session-request")
			if err == nil && len(errs) > 0 {
				err = validate.Invalid(errs)
			}
			if err == nil {
				err = remarshal(doc, &req)
			}
			if err != nil {
				return err
			}
		}
	}
	grants, err := narrow(p, req)
	if err != nil {
		return err
	}
	now := a.now()
	expires := now.Add(a.cfg.SessionTTL)
	if p.KeyExpiresAt != nil && p.KeyExpiresAt.Before(expires) {
		expires = *p.KeyExpiresAt
	}
	issued := auth.NewToken()
	if err := a.store.SessionCreate(c.Request.Context(), p.KeyID, issued, expires, grants); err != nil {
		return err
	}
	c.PureJSON(http.StatusOK, wire.Session{AccessToken: issued.Full, TokenType: "Bearer",
		ExpiresAt: wire.Millis(expires.UnixMilli()), Restaurants: restaurantGrants(grants)})
	return nil
}

func holdsWriteScope(p *auth.Principal) bool { return p.Reach().Writes }

// narrow computes the token's grants: the key's, limited to one restaurant
// and/or to the requested scopes. Asking for anything the key does not
// hold is a 403; unknown scope names are a 400.
func narrow(p *auth.Principal, req sessionRequest) ([]auth.Grant, error) {
	for _, s := range req.Scopes {
		if !catalog.ValidScope(s) {
			return nil, apperr.New(apperr.Invalid, "Unknown scope %q.", s)
		}
	}
	held := p.Grants()
	if req.RestaurantID != nil {
		if !p.HasRestaurant(*req.RestaurantID) {
			// Spec 5.3: no grant for a restaurant is the one 404, so a
			// session request cannot confirm that a restaurant exists.
			return nil, apperr.ErrNotFound
		}
		held = []auth.Grant{{RestaurantID: *req.RestaurantID, Scopes: p.Scopes(*req.RestaurantID)}}
	}
	if len(req.Scopes) == 0 {
		return held, nil
	}
	var out []auth.Grant
	for _, s := range req.Scopes {
		found := false
		for _, g := range held {
			if slices.Contains(g.Scopes, s) {
				found = true
			}
		}
		if !found {
			return nil, apperr.New(apperr.Forbidden, "The key does not hold the scope %s for the requested restaurant(s).", s)
		}
	}
	for _, g := range held {
		var keep []string
		for _, s := range g.Scopes {
			if slices.Contains(req.Scopes, s) {
				keep = append(keep, s)
			}
		}
		if len(keep) > 0 {
			out = append(out, auth.Grant{RestaurantID: g.RestaurantID, Scopes: keep})
		}
	}
	return out, nil
}
