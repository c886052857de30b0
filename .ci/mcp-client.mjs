// Drives POST /mcp with the TypeScript SDK's client (@modelcontextprotocol/sdk,
// pinned in package-lock.json): connect with a bearer key, list the tools,
// walk a collection to its end with walk_records, and call a tool for a
// restaurant the key has no grant for. The client checks every structured
// output against the tool's outputSchema and throws when it does not fit.
// Prints one JSON summary on stdout; tests/mcp_node_test.go runs it and
// judges it.
//
// Usage: node .ci/mcp-client.mjs <endpoint> <key> <restaurant> <collection> <ungranted restaurant>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [endpoint, key, restaurant, collection, ungranted] = process.argv.slice(2);
if (!ungranted) {
  console.error("usage: node mcp-client.mjs <endpoint> <key> <restaurant> <collection> <ungranted restaurant>");
  process.exit(2);
}

const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "foodsafe-ci", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();

const ids = [];
let cursor;
let pages = 0;
do {
  const res = await client.callTool({
    name: "walk_records",
    arguments: { restaurantId: restaurant, collection, limit: 2, ...(cursor ? { cursor } : {}) },
  });
  if (res.isError) {
    throw new Error(`walk_records failed: ${res.content[0].text}`);
  }
  pages++;
  for (const r of res.structuredContent.data) ids.push(r.id);
  cursor = res.structuredContent.nextCursor;
} while (cursor);

const refused = await client.callTool({
  name: "walk_records",
  arguments: { restaurantId: ungranted, collection },
});

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion,
  server: client.getServerVersion(),
  tools: tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint === true })),
  pages,
  ids,
  ungranted: { isError: refused.isError === true, text: refused.content.map((c) => c.text).join("\n") },
}));
await client.close();
