package httpapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/foodsafe/foodsafe/internal/wire"
)

// The numbers route and tool descriptions quote, written from the
// constants that enforce them, so a description cannot fall behind its
// rule.
var (
	// urlLifetimeText is how long a signed download URL works.
	urlLifetimeText = fmt.Sprintf("%d minutes", urlLifetime/time.Minute)
	// maxSpanText is the longest delivery window.
	maxSpanText = fmt.Sprintf("%d days", maxSpanMillis/(24*time.Hour).Milliseconds())
	// limitRangeText is the page size an MCP tool takes.
	limitRangeText = fmt.Sprintf("%d to %d; %d when absent", wire.MinLimit, wire.MaxLimit, mcpDefaultLimit)
	// feedLimitRangeText is the page size walk_all_records takes.
	feedLimitRangeText = fmt.Sprintf("%d to %d; %d when absent", wire.MinLimit, wire.MaxFeedLimit, mcpDefaultLimit)
	// mcpPagesText is the same, said of all the tools at once.
	mcpPagesText = fmt.Sprintf("default page %d, at most %d; walk_all_records at most %d", mcpDefaultLimit, wire.MaxLimit, wire.MaxFeedLimit)
)

// tagProse fills the same numbers into descriptions written as struct
// tags (tool arguments, wire structs), which cannot name a constant: a
// tag says {url-lifetime}, {max-span}, {limit-range} or
// {feed-limit-range}, and the schema
// of the tool carries the number (expandProse).
var tagProse = strings.NewReplacer(
	"{url-lifetime}", urlLifetimeText,
	"{max-span}", maxSpanText,
	"{limit-range}", limitRangeText,
	"{feed-limit-range}", feedLimitRangeText,
)

// expandProse fills the numbers into every description of s.
func expandProse(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	s.Description = tagProse.Replace(s.Description)
	for _, p := range s.Properties {
		expandProse(p)
	}
	expandProse(s.Items)
	for _, a := range s.AnyOf {
		expandProse(a)
	}
}
