package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/openapi"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// The numbers the OpenAPI document quotes where no constant reaches (the
// JSON Schema files, the shared parameters of package openapi) are those
// of the constants that enforce them.
func TestDocumentQuotesTheConstants(t *testing.T) {
	s, err := validate.Load()
	require.NoError(t, err)
	doc, err := Document(s, openapi.Info{Version: "test", Server: openapi.ServerURL("")})
	require.NoError(t, err)
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	for where, want := range map[string]string{
		"schemas/responses.json, FileItem.urlExpiresAt": `"When url stops working (` + urlLifetimeText + `)."`,
		"package openapi, parameter to":                 `to - from at most ` + maxSpanText + `."`,
	} {
		require.Truef(t, strings.Contains(string(b), want), "%s does not say %s", where, want)
	}
}
