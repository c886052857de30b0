// Package catalog names what keys can be granted: the 24 collections of
// spec 2.5 and the scopes derived from them. It is the single list the
// grant validation, routing, schemas and OpenAPI document all read.
package catalog

import (
	"slices"
	"sort"
	"strings"
)

// Collection describes one generic record collection.
type Collection struct {
	// Name is the exact path segment and scope prefix.
	Name string
	// Description is the human text of the collection descriptor (spec 2.4).
	Description string
	// CarriesFiles marks the three collections whose records reference an
	// uploaded file (spec 4.4).
	CarriesFiles bool
	// Events marks the collections whose records are things that happened
	// (a reading, a cycle, a check, a label printed): only those captured
	// after the restaurant's enablement are held, as spec 1 says ("no
	// backfill"). The others describe the restaurant (its equipment, areas,
	// users...) and are accepted whenever captured, because events refer
	// to them: a fridge created last year must resolve today's reading.
	Events bool
}

// ReadScope is the scope that opens the collection for reading.
func (c Collection) ReadScope() string { return c.Name + ":read" }

// WriteScope is the scope that allows ingesting into the collection.
func (c Collection) WriteScope() string { return c.Name + ":write" }

// Collections lists the 24 collections in the order of the spec.
var Collections = []Collection{
	{Name: "restaurants", Description: "The restaurant's own profile as held by the app: name, addresses, closing days, billing details, subscription state and app settings."},
	{Name: "users", Description: "People who use the app in the restaurant: names, contact details, enabled modules and notification preferences."},
	{Name: "areas", Description: "Zones of the restaurant (kitchen, cold room, bar...) that equipment and cleaning tasks belong to."},
	{Name: "equipment", Description: "Fridges, freezers and other cold equipment, with their acceptable temperature range (min/max) and linked sensor."},
	{Name: "sensors", Description: "Wireless temperature sensors and the equipment each one watches."},
	{Name: "temperature-records", Description: "Temperatures measured by a person on fridges and freezers, per shift, with corrective actions.", Events: true},
	{Name: "temperature-readings", Description: "Temperatures reported unattended by sensors on fridges and freezers.", Events: true},
	{Name: "suppliers", Description: "Suppliers the restaurant receives goods from, with contact methods and account number."},
	{Name: "products", Description: "Product names the restaurant uses in its records."},
	{Name: "preparations", Description: "Preparations made in the kitchen, with their lifespan and allergens."},
	{Name: "cleaning-tasks", Description: "The cleaning plan: tasks, their area, recurrence and whether photo proof is required."},
	{Name: "cleaning-task-records", Description: "Completions of cleaning tasks: which task, when, by whom.", Events: true},
	{Name: "cleaning-task-pictures", Description: "Photographs taken as proof of cleaning, each referencing an uploaded file.", CarriesFiles: true, Events: true},
	{Name: "cooling", Description: "Rapid cooling cycles: product, start and end times and temperatures.", Events: true},
	{Name: "freezing", Description: "Freezing cycles: product, start and end times and temperatures.", Events: true},
	{Name: "reheating", Description: "Reheating cycles: product, start and end times, from the low to the high temperature.", Events: true},
	{Name: "transport", Description: "Food transported between sites: departure and arrival places, times and temperatures.", Events: true},
	{Name: "fryer-equipment", Description: "Fryers, with the oil-quality thresholds used to judge their checks."},
	{Name: "fryer-checks", Description: "Oil-quality checks of fryers and the decision taken: oil filtered, changed or left.", Events: true},
	{Name: "cooking-equipment", Description: "Ovens and other cooking equipment, with the core-temperature thresholds a cooked product must reach."},
	{Name: "cooking-temperature-records", Description: "Core temperatures measured on cooked products, per shift, on a piece of cooking equipment.", Events: true},
	{Name: "surface-analyses", Description: "Surface hygiene tests: what was tested, whether it passed, and the action plan when it did not.", Events: true},
	{Name: "traceability-labels", Description: "Traceability labels printed for products, each with a photograph of the original label as an uploaded file.", CarriesFiles: true, Events: true},
	{Name: "drive-files", Description: "Documents filed by the restaurant (PDF, spreadsheets, images...), each referencing an uploaded file.", CarriesFiles: true},
}

// The delivery scopes of spec 5.2, plus their write counterparts used by
// the provider's ingest endpoints.
const (
	DeliveriesRead      = "deliveries:read"
	DeliveriesWrite     = "deliveries:write"
	DeliveryImagesRead  = "delivery-images:read"
	DeliveryImagesWrite = "delivery-images:write"
)

// DeliveryStream is the name a restaurant's deliveries go by among its
// streams: GET /v1/changes lists it beside the collections, and a key
// reads it with DeliveriesRead.
const DeliveryStream = "deliveries"

var (
	byName = func() map[string]Collection {
		m := make(map[string]Collection, len(Collections))
		for _, c := range Collections {
			m[c.Name] = c
		}
		return m
	}()
	scopes = func() []string {
		s := []string{DeliveriesRead, DeliveriesWrite, DeliveryImagesRead, DeliveryImagesWrite}
		for _, c := range Collections {
			s = append(s, c.ReadScope(), c.WriteScope())
		}
		sort.Strings(s)
		return s
	}()
)

// Lookup finds a collection by its exact name.
func Lookup(name string) (Collection, bool) {
	c, ok := byName[name]
	return c, ok
}

// Scopes returns every grantable scope, sorted.
func Scopes() []string { return slices.Clone(scopes) }

// ValidScope reports whether s is a grantable scope name.
func ValidScope(s string) bool {
	_, ok := slices.BinarySearch(scopes, s)
	return ok
}

// IsWriteScope reports whether s allows writing (ingest or upload).
func IsWriteScope(s string) bool { return strings.HasSuffix(s, ":write") }
