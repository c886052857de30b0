package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// requireNodeClient finds node and the TypeScript SDK installed in .ci
// (npm ci --prefix .ci, which CI runs before the tests). In CI (CI set)
// their absence fails the test; elsewhere it skips, saying what to install.
func requireNodeClient(t *testing.T) string {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: CI must run the TypeScript MCP client test", what)
		}
		t.Skipf("%s (CI runs this test; set CI to make this a failure)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	if _, err := os.Stat("../.ci/node_modules/@modelcontextprotocol/sdk/package.json"); err != nil {
		missing("the TypeScript SDK is not installed: run npm ci --prefix .ci")
	}
	return node
}

// A client nobody here wrote: the TypeScript SDK connects with a bearer
// key, lists the tools, walks a collection to its end and is refused a
// restaurant the key has no grant for, as go-sdk clients are. It also
// checks every structured output against the tool's output schema.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := requireNodeClient(t)
	a := newApp(t)
	a.addRestaurants("r1", "r2")
	writer := a.newKey(grant("r1", "areas:write"), grant("r2", "areas:write"))
	for i := 1; i <= 5; i++ {
		a.put(writer, "r1", "areas", fmt.Sprintf("area-%d", i), fmt.Sprintf("m-%d", i), area(fmt.Sprintf("zone %d", i)))
	}
	a.put(writer, "r2", "areas", "area-b", "m-b", area("other tenant"))
	key := a.newKey(grant("r1", "areas:read", "deliveries:read"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "../.ci/mcp-client.mjs", a.srv.URL+"/mcp", key, "r1", "areas", "r2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node client failed; stderr:\n%s", stderr.String())

	var got struct {
		ProtocolVersion string
		Server          struct{ Name string }
		Tools           []struct {
			Name     string
			ReadOnly bool
		}
		Pages     int
		IDs       []string
		Ungranted struct {
			IsError bool
			Text    string
		}
		Typed struct {
			PageValid, ForgedValid bool
			Described              string
			LiveChecked            int
			Invalid                []any
			ExtraMemberValid       bool
			Unknown                struct {
				IsError bool
				Text    string
			}
		}
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got), "stdout: %s", stdout.String())
	require.Equal(t, rev1125, got.ProtocolVersion, "the TypeScript SDK's newest revision")
	require.Equal(t, "foodsafe", got.Server.Name)
	var tools []string
	for _, tl := range got.Tools {
		require.True(t, tl.ReadOnly, tl.Name)
		tools = append(tools, tl.Name)
	}
	require.ElementsMatch(t, []string{"list_restaurants", "list_collections", "walk_records", "get_record", "describe_collection",
		"list_deliveries", "get_delivery", "list_changes", "list_delivery_changes", "walk_all_records"}, tools)
	require.Equal(t, 3, got.Pages, "5 records, 2 per page")
	var want []string
	for _, e := range a.walkAll(key, "r1", "areas", 2) {
		want = append(want, e.ID)
	}
	require.Equal(t, want, got.IDs)
	require.True(t, got.Ungranted.IsError)
	require.Equal(t, apperr.NotFoundDetail, got.Ungranted.Text)

	// Typed records, as the TypeScript SDK and ajv read them.
	require.True(t, got.Typed.PageValid, "a walk page fits walk_records' outputSchema")
	require.False(t, got.Typed.ForgedValid, "a record that names no collection does not")
	require.Equal(t, "areas", got.Typed.Described)
	require.Equal(t, 5, got.Typed.LiveChecked)
	require.Empty(t, got.Typed.Invalid, "every record's data fits describe_collection's schema")
	require.False(t, got.Typed.ExtraMemberValid, "data with a member the schema lacks does not")
	require.True(t, got.Typed.Unknown.IsError)
	require.Contains(t, got.Typed.Unknown.Text, `parameter "collection": is not one of the 24 collections: restaurants, users, areas,`)
	require.NotContains(t, a.logs.String(), secretOf(key))
}
