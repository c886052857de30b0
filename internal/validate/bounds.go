package validate

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// Decoding a JSON body into generic values (what the schema validator
// reads) costs about 40 times the body in memory when the body is made of
// small values: a 1 MiB array of zeros is half a million interfaces, and
// as many violations if the schema refuses them. So before any value is
// built, Bounds reads the body's tokens in place (no copy, no allocation)
// and refuses a shape that no body of this API, REST or MCP, can have:
// an array longer than any schema allows, an object with more members
// than any of the API's objects, a nesting deeper than any, or more names
// and values than the fullest valid body holds. What it lets through is at
// most MaxValues tokens, whose decoded form is a few megabytes at most.
const (
	// MaxItems is the longest array of any body: the spec's cap on an
	// array in record data (spec 4.6, rule 3), which every schema's
	// maxItems repeats; MCP messages hold none longer.
	MaxItems = 1000
	// MaxMembers is the most members of any object: the widest object
	// of the schemas has 19 properties, and every one is closed
	// (additionalProperties: false); an MCP message's params, arguments
	// and _meta hold a handful.
	MaxMembers = 64
	// MaxDepth is the deepest nesting: the schemas nest 6 levels
	// (envelope, data, settings, group, object, value).
	MaxDepth = 32
	// MaxValues caps the names and values of one body: the fullest valid
	// body, a restaurants record with every list at its 1000 items, holds
	// about 16,000 (TestFullestValidBodyIsWithinBounds).
	MaxValues = 100_000
)

// Bounds refuses a body whose shape no schema of the API allows (see
// above) with a 400 that points at where the bound was crossed. A body
// that is not JSON text is left to the decoder to describe.
func Bounds(body []byte) error {
	// Duplicate names are the decoder's to report (Decode); tracking them
	// here would allocate per object.
	d := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true))
	values := 0
	for {
		kind := d.PeekKind()
		if kind == 0 {
			return nil // the end, or a syntax error the decoder reports
		}
		if kind == ']' || kind == '}' {
			if _, err := d.ReadToken(); err != nil {
				return nil
			}
			continue
		}
		if values++; values > MaxValues {
			return bound(d, true, fmt.Sprintf("the body holds more than %d names and values: no body of this API holds as many", MaxValues))
		}
		if _, err := d.ReadToken(); err != nil {
			return nil
		}
		// The container the token is in: its parent when it opened one.
		level := d.StackDepth()
		if kind == '[' || kind == '{' {
			if level > MaxDepth {
				return bound(d, false, fmt.Sprintf("nested more than %d levels deep: no body of this API is", MaxDepth))
			}
			level--
		}
		switch k, n := d.StackIndex(level); {
		case k == '[' && n > MaxItems:
			return bound(d, true, fmt.Sprintf("an array of more than %d items: no array of this API holds more", MaxItems))
		case k == '{' && (n+1)/2 > MaxMembers:
			return bound(d, true, fmt.Sprintf("an object of more than %d members: no object of this API has as many", MaxMembers))
		}
	}
}

// bound is the 400 for a body crossing a bound at the value just read;
// up points at its container instead (the array that is too long, not
// its element).
func bound(d *jsontext.Decoder, up bool, detail string) error {
	p := string(d.StackPointer())
	if i := lastSlash(p); up && i >= 0 {
		p = p[:i]
	}
	return Invalid([]apperr.FieldError{{Pointer: p, Detail: detail}})
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}
