package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// plan is one restaurant's work.
type plan struct {
	restaurant string
	// readable are the collections the run may mirror there, whose
	// files it fetches; due are those it walks this run (their heads
	// moved, or a walk is unfinished).
	readable []string
	due      []string
	// deliveries: the key reads them there (and their images, with
	// images); deliveriesDue: they are walked this run.
	deliveries, deliveriesDue bool
	images                    bool
}

// plans reads the key's grants and decides which streams this run may
// mirror: the restaurants asked for (or every one the key reaches), with
// the collections of their read scopes (or those asked for) and their
// deliveries. markDue then picks the streams that changed.
func (s *Syncer) plans(ctx context.Context) ([]plan, error) {
	var page restaurantList
	if err := s.restaurants(ctx, &page); err != nil {
		return nil, err
	}
	reach := map[string]partnerapi.Grant{}
	for _, g := range page.Data {
		reach[g.RestaurantID] = g
	}
	wanted := s.o.Restaurants
	if len(wanted) == 0 {
		for _, g := range page.Data {
			wanted = append(wanted, g.RestaurantID)
		}
	}
	plans := make([]plan, 0, len(wanted))
	for _, r := range wanted {
		g, ok := reach[r]
		if !ok {
			return nil, fmt.Errorf("the key does not reach restaurant %q (it reaches %d restaurant(s); see GET /v1/restaurants)", r, len(page.Data))
		}
		p, err := s.o.planOf(g, s.log)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// planOf is what the run may mirror of one granted restaurant: what its
// scopes read, narrowed to the collections asked for.
func (o *Options) planOf(g partnerapi.Grant, log *slog.Logger) (plan, error) {
	p := plan{restaurant: g.RestaurantID}
	readable := map[string]bool{}
	for _, sc := range g.Scopes {
		switch sc {
		case "deliveries:read":
			p.deliveries = true
		case "delivery-images:read":
			p.images = true
		default:
			// A collection is readable with its read scope; GET
			// /v1/changes names the streams that hold anything, so a
			// scope of something else never becomes a walk.
			if c, ok := strings.CutSuffix(sc, ":read"); ok && tableFor(g.RestaurantID, c, log) {
				readable[c] = true
			}
		}
	}
	if len(o.Collections) == 0 {
		for c := range readable {
			p.readable = append(p.readable, c)
		}
		slices.Sort(p.readable)
		return p, nil
	}
	for _, c := range o.Collections {
		if c == "deliveries" {
			continue
		}
		if !readable[c] {
			return plan{}, fmt.Errorf("the key cannot read collection %q of restaurant %q (no %s:read scope)", c, p.restaurant, c)
		}
		p.readable = append(p.readable, c)
	}
	asked := slices.Contains(o.Collections, "deliveries")
	if asked && !p.deliveries {
		return plan{}, fmt.Errorf("the key cannot read the deliveries of restaurant %q (no deliveries:read scope)", p.restaurant)
	}
	p.deliveries = p.deliveries && asked
	return p, nil
}

// tableFor reports whether collection c can be mirrored (its name can be
// a table here), saying so when it cannot.
func tableFor(restaurant, c string, log *slog.Logger) bool {
	if targets.TableAllowed(c) {
		return true
	}
	log.Warn("a collection whose name cannot be a table here is skipped", "restaurant", restaurant, "collection", c)
	return false
}

// restaurantList is the answer of GET /v1/restaurants.
type restaurantList struct {
	Data []partnerapi.Grant `json:"data"`
}

// restaurants reads the key's grants: GET /v1/restaurants conditional on
// the ETag of the list the target keeps, so that while the grants are
// unchanged the server answers 304 without a body and the kept list is
// planned from (a key of 20,000 restaurants: a few hundred bytes instead
// of 11 MB). A list the target cannot read back is asked for whole.
func (s *Syncer) restaurants(ctx context.Context, out *restaurantList) error {
	etag, kept, err := s.t.Streams.RestaurantList(ctx)
	if err != nil {
		return err
	}
	var held restaurantList
	if etag != "" && json.Unmarshal([]byte(kept), &held) != nil {
		etag = ""
	}
	tag, notModified, err := s.c.GetIfNoneMatch(ctx, "/v1/restaurants", nil, etag, out)
	s.tally(ctx, err)
	if err != nil {
		return err
	}
	if notModified {
		*out = held
		return nil
	}
	list, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return s.t.Streams.PutRestaurantList(ctx, tag, string(list))
}
