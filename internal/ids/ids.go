// Package ids holds the identifier rule of spec 4.6: 1 to 200 characters,
// starting with a letter or digit, then letters, digits, '.', '_', ':' or
// '-'. Restaurant, record, mutation, delivery and image ids all follow it;
// the JSON Schemas carry the same Pattern (TestSchemasCarryPattern keeps
// them in step, FuzzValid holds Valid to Pattern).
package ids

// Pattern is the identifier rule as a regular expression.
const Pattern = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$`

// Valid reports whether s is a well-formed identifier.
func Valid(s string) bool {
	if len(s) < 1 || len(s) > 200 || !alnum(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
