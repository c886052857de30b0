package typed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Deriving the layer from the schemas.

// schema is the part of a JSON Schema the layer reads. Properties keep
// their order: it is the columns' order.
type schema struct {
	Ref         string             `json:"$ref"`
	Type        json.RawMessage    `json:"type"`
	Description string             `json:"description"`
	Pattern     string             `json:"pattern"`
	Required    []string           `json:"required"`
	Properties  orderedProps       `json:"properties"`
	Items       *schema            `json:"items"`
	Defs        map[string]*schema `json:"$defs"`
	// Combinators the layer cannot turn into columns: a property using
	// one fails the derivation instead of being silently skipped. The
	// root's if/then/else only constrain values (cooling's end), so
	// they are allowed there.
	AllOf json.RawMessage `json:"allOf"`
	AnyOf json.RawMessage `json:"anyOf"`
	OneOf json.RawMessage `json:"oneOf"`
	If    json.RawMessage `json:"if"`
}

type prop struct {
	name string
	s    *schema
}

type orderedProps []prop

// UnmarshalJSON keeps the members in the order the file lists them.
func (o *orderedProps) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("properties is not an object")
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		var s schema
		if err := d.Decode(&s); err != nil {
			return err
		}
		*o = append(*o, prop{name: t.(string), s: &s})
	}
	_, err := d.Token()
	return err
}

// builder derives relations from the schemas. A member is a timestamp
// when its schema has the pattern of defs.json's timestamp (epoch
// milliseconds as a digit string), an identifier when it has the pattern
// of its id (at most 200 characters): read from defs.json, so a change of
// either rule there is followed here.
type builder struct {
	defs                        map[string]*schema
	timestampPattern, idPattern string
}

func buildLayer(fsys fs.FS) (*layer, error) {
	read := func(name string) (*schema, error) {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var s schema
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &s, nil
	}
	defs, err := read("defs.json")
	if err != nil {
		return nil, err
	}
	b := builder{defs: defs.Defs}
	for name, p := range map[string]*string{"timestamp": &b.timestampPattern, "id": &b.idPattern} {
		d := defs.Defs[name]
		if d == nil || d.Pattern == "" {
			return nil, fmt.Errorf("defs.json has no %s with a pattern", name)
		}
		*p = d.Pattern
	}
	l := &layer{relations: map[string][]*Relation{}}
	files, err := fs.Glob(fsys, "*.data.json")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		coll := strings.TrimSuffix(f, ".data.json")
		s, err := read(f)
		if err != nil {
			return nil, err
		}
		rels, err := b.source(coll, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		l.relations[coll] = rels
		l.sources = append(l.sources, coll)
	}
	d, err := read("delivery.json")
	if err != nil {
		return nil, err
	}
	rels, err := b.source(DeliveriesSource, d)
	if err != nil {
		return nil, fmt.Errorf("delivery.json: %w", err)
	}
	l.relations[DeliveriesSource] = rels
	l.sources = append(l.sources, DeliveriesSource)
	slices.Sort(l.sources)
	seen := map[string]bool{}
	for _, s := range l.sources {
		for _, r := range l.relations[s] {
			if seen[r.Name] {
				return nil, fmt.Errorf("two typed relations named %s", r.Name)
			}
			seen[r.Name] = true
		}
	}
	return l, nil
}

// resolve follows a $ref into defs.json; the referring schema's own
// description wins over the definition's.
func (b builder) resolve(s *schema) (*schema, error) {
	if s.Ref == "" {
		return s, nil
	}
	_, name, ok := strings.Cut(s.Ref, "#/$defs/")
	def := b.defs[name]
	if !ok || def == nil {
		return nil, fmt.Errorf("unknown $ref %q", s.Ref)
	}
	r, err := b.resolve(def)
	if err != nil {
		return nil, err
	}
	out := *r
	if s.Description != "" {
		out.Description = s.Description
	}
	return &out, nil
}

// baseType is a schema's type without null, and whether null is allowed.
func baseType(s *schema) (string, bool, error) {
	var types []string
	if err := json.Unmarshal(s.Type, &types); err != nil {
		var one string
		if err := json.Unmarshal(s.Type, &one); err != nil {
			return "", false, fmt.Errorf("no type")
		}
		types = []string{one}
	}
	base, null := "", false
	for _, t := range types {
		if t == "null" {
			null = true
			continue
		}
		if base != "" {
			return "", false, fmt.Errorf("types %v: one besides null is supported", types)
		}
		base = t
	}
	if base == "" {
		return "", false, fmt.Errorf("no type besides null")
	}
	return base, null, nil
}

// source derives a collection's (or the deliveries') relation and its
// children: the key columns, a column per scalar member of data and a
// child per array member, then the envelope's columns, the indexes.
func (b builder) source(source string, root *schema) ([]*Relation, error) {
	if root.AllOf != nil || root.AnyOf != nil || root.OneOf != nil {
		return nil, fmt.Errorf("a schema combinator at the root")
	}
	name := Prefix + TableName(source)
	own := &Relation{Name: name, Source: source, Description: root.Description}
	own.Columns = []Column{
		{Name: "restaurant_id", Kind: Text, Key: true, src: fromRestaurant, From: "restaurantId", Description: "The restaurant the record belongs to."},
		{Name: "id", Kind: Text, Key: true, src: fromID, From: "id", Description: "The record's id."},
	}
	children, err := b.members(own, root)
	if err != nil {
		return nil, err
	}
	describeOwn(own)
	own.Indexes = indexesOf(own, root)
	rels := append([]*Relation{own}, children...)
	for _, r := range rels {
		for i := range r.Columns {
			r.Columns[i].Description = describe(r.Columns[i].Description, r.Columns[i].Kind)
		}
	}
	if err := uniqueColumns(rels); err != nil {
		return nil, err
	}
	return rels, nil
}

// members adds to own a column per scalar member of root and returns a
// child relation per array member.
func (b builder) members(own *Relation, root *schema) ([]*Relation, error) {
	var children []*Relation
	for _, p := range root.Properties {
		if own.Source == DeliveriesSource && (p.name == "id" || p.name == "restaurantId") {
			continue // the key columns
		}
		s, err := b.resolve(p.s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		base, _, err := baseType(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		if base == "array" {
			c, err := b.child(own, p.name, s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			children = append(children, c)
			continue
		}
		cols, err := b.columns([]string{p.name}, p.s)
		if err != nil {
			return nil, err
		}
		own.Columns = append(own.Columns, cols...)
	}
	return children, nil
}

// describeOwn describes a source's own relation and, for a collection,
// adds the envelope's columns (a delivery has no envelope).
func describeOwn(own *Relation) {
	if own.Source == DeliveriesSource {
		own.Description = "Every delivery mirrored, one row each."
		return
	}
	own.Description = "The live records of " + own.Source + " (no tombstones, no superseded versions), one row each."
	own.Columns = append(own.Columns,
		Column{Name: "sequence", Kind: Integer, src: fromSequence, From: "sequence", Description: "The record's position in its stream, as a number."},
		Column{Name: "captured_at", Kind: Time, src: fromCaptured, From: "capturedAt", Description: "When the device recorded this state."},
		Column{Name: "captured_at_ms", Kind: Millis, src: fromCaptured, From: "capturedAt", Description: "When the device recorded this state."},
		Column{Name: "received_at", Kind: Time, src: fromReceived, From: "receivedAt", Description: "When the service received it."},
		Column{Name: "received_at_ms", Kind: Millis, src: fromReceived, From: "receivedAt", Description: "When the service received it."},
	)
}

// indexesOf are the indexes the obvious joins and filters need: every
// reference (a column named *_id whose schema is an identifier; some are
// free text, which an index entry may not hold) and the time of every
// required timestamp of data (timestamp, occurredAt, beginDate...).
func indexesOf(own *Relation, root *schema) [][]string {
	var out [][]string
	for _, c := range own.Columns {
		switch {
		case c.src != fromData:
		case c.Kind == Text && strings.HasSuffix(c.Name, "_id") && c.identifier,
			c.Kind == Time && len(c.path) == 1 && slices.Contains(root.Required, c.path[0]):
			out = append(out, []string{"restaurant_id", c.Name})
		}
	}
	return out
}

// uniqueColumns refuses relations with two columns of one name.
func uniqueColumns(rels []*Relation) error {
	for _, r := range rels {
		seen := map[string]bool{}
		for _, c := range r.Columns {
			if seen[c.Name] {
				return fmt.Errorf("relation %s has two columns named %s", r.Name, c.Name)
			}
			seen[c.Name] = true
		}
	}
	return nil
}

// child derives the relation of a top-level array: one row per element.
func (b builder) child(parent *Relation, member string, s *schema) (*Relation, error) {
	if s.Items == nil {
		return nil, fmt.Errorf("an array without items")
	}
	noun := "record"
	if parent.Source == DeliveriesSource {
		noun = "delivery"
	}
	r := &Relation{
		Name: parent.Name + "_" + snake(member), Source: parent.Source, Parent: parent.Name, Array: member, arrayPath: []string{member},
		Description: "One row per element of data." + member + " (" + lowerFirst(strings.TrimSuffix(s.Description, ".")) + "), keyed to its " + noun + " in " + parent.Name + ".",
	}
	r.Columns = []Column{
		{Name: "restaurant_id", Kind: Text, Key: true, src: fromRestaurant, From: "restaurantId", Description: "The restaurant the " + noun + " belongs to."},
		{Name: "parent_id", Kind: Text, Key: true, src: fromParent, From: "id", Description: "The id of the " + noun + " (" + parent.Name + ".id)."},
		{Name: "ordinal", Kind: Integer, Key: true, src: fromOrdinal, From: "data." + member + "[]", Description: "The element's position in the array, from 1."},
	}
	items, err := b.resolve(s.Items)
	if err != nil {
		return nil, err
	}
	base, _, err := baseType(items)
	if err != nil {
		return nil, fmt.Errorf("items: %w", err)
	}
	if base == "object" && len(items.Properties) > 0 {
		for _, p := range items.Properties {
			cols, err := b.columns([]string{p.name}, p.s)
			if err != nil {
				return nil, err
			}
			r.Columns = append(r.Columns, cols...)
		}
	} else {
		cols, err := b.leaf("value", nil, items)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		r.Columns = append(r.Columns, cols...)
	}
	for i := range r.Columns {
		c := &r.Columns[i]
		if c.src == fromData {
			c.From = "data." + member + "[]" + strings.TrimPrefix(c.From, "data")
		}
	}
	return r, nil
}

// columns derives the columns of a member at path (relative to data or
// to an array element): a scalar is one column (a timestamp two), an
// object is flattened into its members' columns, named after the path
// (detailedAddress.postalCode: detailed_address_postal_code); an array
// nested in an object is one JSON column.
func (b builder) columns(path []string, raw *schema) ([]Column, error) {
	s, err := b.resolve(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	if s.AllOf != nil || s.AnyOf != nil || s.OneOf != nil || s.If != nil {
		return nil, fmt.Errorf("%s: a schema combinator the typed layer cannot turn into columns", strings.Join(path, "."))
	}
	base, _, err := baseType(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	if base == "object" && len(s.Properties) > 0 {
		var out []Column
		for _, p := range s.Properties {
			cols, err := b.columns(append(slices.Clone(path), p.name), p.s)
			if err != nil {
				return nil, err
			}
			out = append(out, cols...)
		}
		return out, nil
	}
	var name []string
	for _, p := range path {
		name = append(name, snake(p))
	}
	return b.leaf(strings.Join(name, "_"), path, s)
}

// leaf is the column (or the two of a timestamp) of a scalar member.
func (b builder) leaf(name string, path []string, s *schema) ([]Column, error) {
	base, _, err := baseType(s)
	if err != nil {
		return nil, err
	}
	from := "data"
	if len(path) > 0 {
		from += "." + strings.Join(path, ".")
	}
	col := Column{Name: safeName(name), src: fromData, path: path, From: from, Description: s.Description, identifier: s.Pattern == b.idPattern}
	switch {
	case base == "string" && s.Pattern == b.timestampPattern:
		col.Kind = Time
		ms := col
		ms.Name, ms.Kind = name+"_ms", Millis
		return []Column{col, ms}, nil
	case base == "string":
		col.Kind = Text
	case base == "integer":
		col.Kind = Integer
	case base == "number":
		col.Kind = Number
	case base == "boolean":
		col.Kind = Boolean
	case base == "array", base == "object":
		col.Kind = JSON
	default:
		return nil, fmt.Errorf("type %q", base)
	}
	return []Column{col}, nil
}

// wireForm matches what a schema's description says of how a value
// travels (an instant as epoch milliseconds): the schema describes the
// wire, and a column of the mirror may hold the value in another form
// (a time column holds the instant).
var wireForm = regexp.MustCompile(`(?i)(,\s*|\s+)?(in\s+)?epoch milliseconds`)

// kindWording is what a column's description says of its form, by kind:
// the only kind whose meaning the type name alone does not carry.
var kindWording = map[Kind]string{Millis: ", in epoch milliseconds"}

// describe is a column's description: its member's meaning without the
// member's wire form, then what the column's kind says of its form, so
// that no description can contradict its column's type
// (TestDescriptionsFollowKinds).
func describe(meaning string, k Kind) string {
	d := strings.TrimSpace(wireForm.ReplaceAllString(meaning, ""))
	if w := kindWording[k]; w != "" {
		d = strings.TrimSuffix(d, ".") + w + "."
	}
	return d
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// snake turns a member name into a column name: equipmentId is
// equipment_id, s3Key s3_key.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reservedWords are the names a column cannot take unquoted in
// PostgreSQL, SQLite or DuckDB (a test runs every name of the layer
// through all three); such a name gets a trailing underscore (index_,
// from_), so nobody has to quote.
var reservedWords = wordSet(`
	abort action add all alter analyse analyze and any array as asc asymmetric attach autoincrement
	before begin between both by cascade case cast check collate column commit conflict constraint
	create cross current current_catalog current_date current_role current_time current_timestamp
	current_user database default deferrable deferred delete desc detach distinct do drop each else
	end escape except exclusive exists explain fail false fetch filter following for foreign from full
	generated glob group groups having if ignore immediate in index indexed initially inner insert
	instead intersect into is isnull join key lateral leading left like limit localtime localtimestamp
	match natural no not nothing notnull null nulls of offset on only or order others outer over
	partition placing plan pragma preceding primary query raise range recursive references regexp
	reindex release rename replace restrict returning right rollback row rows savepoint select
	session_user set some symmetric table temp temporary then ties to trailing transaction trigger
	true unbounded union unique update user using vacuum values variadic view virtual when where
	window with without`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

func safeName(name string) string {
	if reservedWords[name] {
		return name + "_"
	}
	return name
}
