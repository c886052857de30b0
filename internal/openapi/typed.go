package openapi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/foodsafe/foodsafe/internal/catalog"
)

// The document types each collection's records the way code generators
// read: a schema per collection whose discriminating member is a one-value
// enum and whose data is that collection's *Data schema, and a union of
// them (oneOf with a discriminator mapping). openapi-typescript turns the
// union into a TypeScript discriminated union, so `e.collection ===
// "areas"` narrows `e.data` to AreasData; oapi-codegen gives the Go union
// a ValueByDiscriminator method whose result a type switch narrows. JSON
// Schema conditionals (if/then on collection), which both generators
// ignore, are not used for it.
//
// The helpers below make such families from a base schema of schemas/;
// any operation names a member or the union like any other component
// (Response.Schema, Body.Schema), or is made once per collection
// (Op.PerCollection).

// Family is a schema made once per collection from a base component,
// and the union of the members.
type Family struct {
	// Base is the component the members are made from; Union is the
	// component that becomes the union (Base itself when equal).
	Base, Union string
	// Member names a collection's member from its PascalCase name.
	Member func(pascal string) string
	// Discriminator is the member that names the collection.
	Discriminator string
	// Typed lists the members whose schema becomes a collection's
	// component (data: "Data", record: "Envelope").
	Typed map[string]string
	// Drop lists members the per-collection schemas do not have.
	Drop []string
	// Require lists members the per-collection schemas require.
	Require []string
	// Others are further members of the union, by discriminator value
	// (the records feed's deliveries).
	Others map[string]Other
	// Describe is a member's description, %s the collection.
	Describe string
	// Split, when set, makes each member a union of a live shape, typed,
	// and one tombstone shape shared by all, told apart by a boolean.
	Split *Split
}

// Split is a member that is live or a tombstone: a snapshot's data is the
// collection's on a live record, and anything (ignored) on a tombstone,
// which JSON Schema says with if/then but generators read only as a union.
type Split struct {
	// Flag is the boolean member that says which (true: tombstone).
	Flag string
	// Live names a collection's live shape; Tombstone is the shared one.
	Live      func(pascal string) string
	Tombstone string
	// DescribeLive (%s the collection) and DescribeTombstone describe
	// them.
	DescribeLive, DescribeTombstone string
}

// Other is a member of a family's union that is not a collection's.
type Other struct {
	Name, Describe string
}

// families are the per-collection schemas of the document.
var families = []Family{
	{Base: "Envelope", Union: "Envelope", Member: func(p string) string { return p + "Envelope" },
		Discriminator: "collection", Typed: map[string]string{"data": "Data"},
		Describe: "A record of `%s` as received (spec 2.3); `data` is absent on a tombstone."},
	{Base: "IngestSnapshot", Member: func(p string) string { return p + "Snapshot" },
		Typed:    map[string]string{"data": "Data"},
		Describe: "A full snapshot of one `%s` record (spec 4.6): live (`deleted: false`, with its data) or a tombstone (`deleted: true`).",
		Split: &Split{Flag: "deleted", Live: func(p string) string { return p + "LiveSnapshot" }, Tombstone: "TombstoneSnapshot",
			DescribeLive:      "A live `%s` record: `data` is required and of the collection's shape.",
			DescribeTombstone: "A tombstone: the record was deleted in the app. Its data may be omitted and is ignored if sent (neither validated nor stored)."}},
	{Base: "RecordFeedItem", Union: "RecordFeedItem", Member: func(p string) string { return p + "FeedItem" },
		Discriminator: "stream", Typed: map[string]string{"record": "Envelope"}, Drop: []string{"delivery"},
		Require: []string{"record"}, Others: map[string]Other{catalog.DeliveryStream: {Name: "DeliveriesFeedItem",
			Describe: "An item of a restaurant's deliveries stream of the records feed: the delivery exactly as GET .../delivery-changes returns it."}},
		Describe: "An item of a `%s` stream of the records feed: the record exactly as a walk of the collection returns it."},
	{Base: "IngestBatchItem", Union: "IngestBatchItem", Member: func(p string) string { return p + "BatchItem" },
		Discriminator: "collection", Typed: map[string]string{"snapshot": "Snapshot"}, Drop: []string{"delivery"},
		Require: []string{"snapshot"}, Others: map[string]Other{catalog.DeliveryStream: {Name: "DeliveriesBatchItem",
			Describe: "A delivery of a batch: the body of PUT .../deliveries/{deliveryId}, whose id stands for the path's."}},
		Describe: "A snapshot of a `%s` record in a batch: the body of its single PUT, whose id and mutationId stand for the path's."},
}

// CollectionSchema names the component of a collection's member of a
// family: CollectionSchema("Snapshot", "areas") is "AreasSnapshot".
func CollectionSchema(suffix, collection string) string {
	return pascal(collection) + suffix
}

// FileCollections are the collections whose records carry a file: the only
// ones the upload routes take.
func FileCollections() []string {
	var out []string
	for _, c := range catalog.Collections {
		if c.CarriesFiles {
			out = append(out, c.Name)
		}
	}
	return out
}

// addFamilies makes every family's members and unions.
func addFamilies(schemas openapi3.Schemas) error {
	for _, f := range families {
		if err := f.add(schemas); err != nil {
			return fmt.Errorf("schema family %s: %w", f.Base, err)
		}
	}
	return nil
}

func (f Family) add(schemas openapi3.Schemas) error {
	base := schemas[f.Base]
	if base == nil || base.Value == nil {
		return fmt.Errorf("no component %s", f.Base)
	}
	mapping := map[string]openapi3.MappingRef{}
	var oneOf openapi3.SchemaRefs
	for _, c := range catalog.Collections {
		p := pascal(c.Name)
		m, err := f.member(base.Value, c.Name, p)
		if err != nil {
			return err
		}
		name := f.Member(p)
		if f.Split != nil {
			m, err = f.split(schemas, base.Value, m, c.Name, p)
			if err != nil {
				return err
			}
		}
		schemas[name] = m.NewRef()
		ref := "#/components/schemas/" + name
		mapping[c.Name] = openapi3.MappingRef{Ref: ref}
		oneOf = append(oneOf, &openapi3.SchemaRef{Ref: ref})
	}
	for value, o := range f.Others {
		ref := "#/components/schemas/" + o.Name
		m, err := f.other(base.Value, value, o.Describe)
		if err != nil {
			return err
		}
		schemas[o.Name] = m.NewRef()
		mapping[value] = openapi3.MappingRef{Ref: ref}
		oneOf = append(oneOf, &openapi3.SchemaRef{Ref: ref})
	}
	if f.Union == "" {
		return nil
	}
	schemas[f.Union] = (&openapi3.Schema{Description: base.Value.Description, OneOf: oneOf,
		Discriminator: &openapi3.Discriminator{PropertyName: f.Discriminator, Mapping: mapping}}).NewRef()
	return nil
}

// split stores a collection's live shape (live, made from the base) and
// the shared tombstone, and returns the member: the union of the two.
func (f Family) split(schemas openapi3.Schemas, base, live *openapi3.Schema, collection, p string) (*openapi3.Schema, error) {
	sp := f.Split
	flag := func(s *openapi3.Schema, v bool) {
		desc := "false: a live record."
		if v {
			desc = "true: a tombstone."
		}
		// const: a literal type in TypeScript, a bool in Go (an enum of a
		// boolean is not read by every generator).
		s.Properties[sp.Flag] = (&openapi3.Schema{Type: &openapi3.Types{"boolean"}, Const: v, Description: desc}).NewRef()
		s.If, s.Then, s.Else = nil, nil, nil
	}
	flag(live, false)
	live.Description = fmt.Sprintf(sp.DescribeLive, collection)
	for prop := range f.Typed {
		live.Required = appendNew(live.Required, prop)
	}
	schemas[sp.Live(p)] = live.NewRef()
	if schemas[sp.Tombstone] == nil {
		t, err := cloneSchema(base)
		if err != nil {
			return nil, err
		}
		flag(t, true)
		t.Description, t.Title = sp.DescribeTombstone, ""
		schemas[sp.Tombstone] = t.NewRef()
	}
	return &openapi3.Schema{Description: fmt.Sprintf(f.Describe, collection), OneOf: openapi3.SchemaRefs{
		{Ref: "#/components/schemas/" + sp.Live(p)}, {Ref: "#/components/schemas/" + sp.Tombstone}}}, nil
}

// member is the base made for one collection.
func (f Family) member(base *openapi3.Schema, collection, p string) (*openapi3.Schema, error) {
	s, err := cloneSchema(base)
	if err != nil {
		return nil, err
	}
	s.Description = fmt.Sprintf(f.Describe, collection)
	s.Title = ""
	for _, d := range f.Drop {
		delete(s.Properties, d)
	}
	s.OneOf = nil // the base's choice between dropped members
	s.Required = appendNew(s.Required, f.Require...)
	if f.Discriminator != "" {
		s.Properties[f.Discriminator] = oneValue(s.Properties[f.Discriminator], collection)
	}
	for prop, suffix := range f.Typed {
		old := s.Properties[prop]
		if old == nil {
			return nil, fmt.Errorf("%s has no member %s", f.Base, prop)
		}
		s.Properties[prop] = &openapi3.SchemaRef{Ref: "#/components/schemas/" + p + suffix}
	}
	return s, nil
}

// other is the base made for a discriminator value that is not a
// collection: the typed members dropped, the dropped ones kept.
func (f Family) other(base *openapi3.Schema, value, describe string) (*openapi3.Schema, error) {
	s, err := cloneSchema(base)
	if err != nil {
		return nil, err
	}
	s.Description = describe
	s.OneOf = nil
	for prop := range f.Typed {
		delete(s.Properties, prop)
	}
	s.Required = appendNew(s.Required, f.Drop...)
	s.Properties[f.Discriminator] = oneValue(s.Properties[f.Discriminator], value)
	return s, nil
}

// oneValue is a string member that takes one value: an enum of one, which
// both generators turn into a literal type (const is not read by all).
func oneValue(old *openapi3.SchemaRef, value string) *openapi3.SchemaRef {
	desc := ""
	if old != nil && old.Value != nil {
		desc = old.Value.Description
	}
	return (&openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: []any{value}, Description: desc}).NewRef()
}

func appendNew(list []string, more ...string) []string {
	out := append([]string{}, list...)
	for _, m := range more {
		found := false
		for _, x := range out {
			found = found || x == m
		}
		if !found {
			out = append(out, m)
		}
	}
	return out
}

// cloneSchema copies a schema through JSON, references kept as
// references.
func cloneSchema(s *openapi3.Schema) (*openapi3.Schema, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var out openapi3.Schema
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// withPerCollection is ops with, after each operation that has
// PerCollection, its typed operation of each collection.
func withPerCollection(ops []Op) []Op {
	var out []Op
	for _, op := range ops {
		out = append(out, op)
		if op.PerCollection == nil {
			continue
		}
		for _, c := range catalog.Collections {
			out = append(out, op.forCollection(c.Name))
		}
	}
	return out
}

// forCollection is op typed for one collection.
func (op Op) forCollection(collection string) Op {
	p := pascal(collection)
	t := op
	t.PerCollection = nil
	t.Path = strings.Replace(op.Path, ":collection", collection, 1)
	t.ID = fmt.Sprintf(op.PerCollection.ID, p)
	t.Summary = fmt.Sprintf("%s (%s)", op.Summary, collection)
	t.Scopes = nil
	for _, sc := range op.Scopes {
		t.Scopes = append(t.Scopes, strings.Replace(sc, "<collection>", collection, 1))
	}
	t.Description = fmt.Sprintf("%s, typed for `%s`: the body's data is a `%sData`. The same operation as %s.",
		op.Summary, collection, p, op.ID)
	if op.Body != nil {
		b := *op.Body
		b.Schema = p + op.PerCollection.Body
		b.Example = p + op.PerCollection.Body
		t.Body = &b
	}
	if op.PerCollection.ParamExamples != nil {
		t.ParamExamples = op.PerCollection.ParamExamples(collection)
	}
	return t
}
