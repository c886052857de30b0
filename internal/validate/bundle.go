package validate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Bundle is the named schema as one self-contained document: the shared
// definitions it uses (defs.json, transitively) copied under its own
// $defs and its references rewritten to them, its $id dropped. A client
// compiles it alone, with no resolver: the MCP tool describe_collection
// hands a collection's data schema to clients and models this way, from
// the same file the service validates ingest with.
func (s *Set) Bundle(name string) (json.RawMessage, error) {
	doc, ok := s.Docs[name]
	if !ok || name == "defs" {
		return nil, fmt.Errorf("no schema %q to bundle", name)
	}
	shared, _ := s.Docs["defs"]["$defs"].(map[string]any)
	out := copyJSON(doc).(map[string]any)
	delete(out, "$id")
	used := map[string]any{}
	var pending []string
	note := func(def string) {
		if _, seen := used[def]; !seen {
			used[def] = nil
			pending = append(pending, def)
		}
	}
	var rewrite func(v any) error
	rewrite = func(v any) error {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				if ref, ok := c.(string); ok && k == "$ref" {
					def, err := sharedDef(ref)
					if err != nil {
						return fmt.Errorf("schema %s: %w", name, err)
					}
					t[k] = "#/$defs/" + def
					note(def)
					continue
				}
				if err := rewrite(c); err != nil {
					return err
				}
			}
		case []any:
			for _, c := range t {
				if err := rewrite(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := rewrite(out); err != nil {
		return nil, err
	}
	for len(pending) > 0 {
		def := pending[0]
		pending = pending[1:]
		d, ok := shared[def]
		if !ok {
			return nil, fmt.Errorf("schema %s: defs.json has no %q", name, def)
		}
		d = copyJSON(d)
		if err := rewrite(d); err != nil {
			return nil, err
		}
		used[def] = d
	}
	if len(used) > 0 {
		out["$defs"] = used
	}
	return json.Marshal(out)
}

// sharedDef names the shared definition a reference of a body schema
// points to: "defs.json#/$defs/text" in a body schema, "#/$defs/text"
// within defs.json. Body schemas refer to nothing else.
func sharedDef(ref string) (string, error) {
	doc, frag, _ := strings.Cut(ref, "#")
	def, ok := strings.CutPrefix(frag, "/$defs/")
	if (doc != "" && doc != "defs.json") || !ok || strings.Contains(def, "/") {
		return "", fmt.Errorf("reference %q is not to a shared definition", ref)
	}
	return def, nil
}

// copyJSON copies a decoded JSON value.
func copyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, c := range t {
			m[k] = copyJSON(c)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = copyJSON(c)
		}
		return out
	default:
		return v
	}
}
