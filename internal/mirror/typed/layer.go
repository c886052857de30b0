// Package typed is the mirror's typed layer: for every collection (and for
// the deliveries) a relation with one typed column per field of data, live
// records only, and a relation of its own for every array of data, one row
// per element. It is derived, when the binary starts, from the JSON
// Schemas the API publishes (the schemas/ files its OpenAPI document is
// built from, embedded here): the schemas are the contract, not the
// server's code, so the mirror still shares no code with the server, and
// the layer cannot drift from the contract it mirrors. It is the same for
// every run of a release, whatever server answers, and known without one
// (export, status, upgrades).
//
// The package says what the relations are (Relations, Of), what a record's
// rows in them are (Rows) and writes their reference page (Doc); it knows
// no database. The target (internal/mirror/targets) creates them and keeps
// them in step with its pages; the export (internal/mirror/export) writes
// them out.
package typed

import (
	"slices"
	"strings"

	"github.com/foodsafe/foodsafe/schemas"
)

// Kind is the type of a typed column.
type Kind int

// The kinds of column. A timestamp of the API (epoch milliseconds as a
// digit string) becomes two columns: the instant (Time) and its epoch
// milliseconds (Millis).
const (
	Text    Kind = iota // TEXT
	Integer             // BIGINT
	Number              // DOUBLE PRECISION (REAL in SQLite)
	Boolean             // BOOLEAN (0 or 1 in SQLite)
	Time                // timestamptz in PostgreSQL, ISO-8601 text in SQLite (2026-11-27T08:05:00.000Z)
	Millis              // BIGINT, epoch milliseconds
	JSON                // jsonb in PostgreSQL, JSON text in SQLite: an array or object nested in an object
)

// TimeText is a Time written as text (in SQLite, and in a CSV export):
// ISO-8601 in UTC with milliseconds, which sorts as the instants do and
// which SQLite's date functions read.
const TimeText = "2006-01-02T15:04:05.000Z"

// colSource says where a column's value comes from.
type colSource int

const (
	fromData       colSource = iota // a member of data (or of an array element), at Column.path
	fromRestaurant                  // the restaurant the row was mirrored from
	fromID                          // the record's (or delivery's) id
	fromParent                      // a child row's parent id
	fromOrdinal                     // a child row's position in its array, from 1
	fromSequence                    // the envelope's sequence
	fromCaptured                    // the envelope's capturedAt
	fromReceived                    // the envelope's receivedAt
)

// Column is a column of a typed relation.
type Column struct {
	Name string
	Kind Kind
	// Key columns are never null and make the primary key.
	Key bool
	// From says where the value comes from, for the documentation:
	// data.equipmentId, data.temperatureRecords[].value, the envelope's
	// sequence...
	From string
	// Description is the schema's description of the member.
	Description string
	src         colSource
	path        []string // for fromData: member names from data (or from the array element)
	// identifier: the schema holds the value to the API's identifier rule
	// (at most 200 characters), so it fits an index entry; a free text
	// (up to 10,000 characters) may not, in PostgreSQL.
	identifier bool
}

// Relation is a typed relation of the mirror.
type Relation struct {
	Name string
	// Source is the collection it is derived from, or "deliveries".
	Source string
	// Parent is the relation a child relation belongs to ("" for a
	// collection's or the deliveries' own relation); Array is the member
	// of data the child's rows are the elements of.
	Parent  string
	Array   string
	Columns []Column
	// Indexes are the secondary indexes, each a list of columns.
	Indexes     [][]string
	Description string
	arrayPath   []string
}

// KeyColumns are the relation's primary key.
func (r *Relation) KeyColumns() []string {
	var k []string
	for _, c := range r.Columns {
		if c.Key {
			k = append(k, c.Name)
		}
	}
	return k
}

// Prefix starts the name of every typed relation; no collection's own
// table may start with it.
const Prefix = "typed_"

// DeliveriesSource names the deliveries as a source of typed relations.
const DeliveriesSource = "deliveries"

// TableName is a collection's name as SQL names it, hyphens as
// underscores (temperature-records -> temperature_records): the name of
// its table in a mirror, and of its typed relations after Prefix.
func TableName(collection string) string { return strings.ReplaceAll(collection, "-", "_") }

// layer is the typed layer of this release, by source, each source's
// relations parent first.
type layer struct {
	sources   []string // sorted
	relations map[string][]*Relation
}

var typedLayer = mustLayer()

func mustLayer() *layer {
	l, err := buildLayer(schemas.FS)
	if err != nil {
		// The schemas are embedded: this fails at the first test, never
		// at a partner's.
		panic("typed: deriving the typed layer from the schemas: " + err.Error())
	}
	return l
}

// Relations lists every typed relation of this release, by source, each
// source's own relation before its children.
func Relations() []*Relation {
	var out []*Relation
	for _, s := range typedLayer.sources {
		out = append(out, typedLayer.relations[s]...)
	}
	return out
}

// Sources are the collections (and "deliveries") with typed relations.
func Sources() []string { return slices.Clone(typedLayer.sources) }

// Of is a source's relations, its own first (nil: the source has none,
// e.g. a collection this release does not know).
func Of(source string) []*Relation { return typedLayer.relations[source] }
