// Drives POST /mcp with the TypeScript SDK's client (@modelcontextprotocol/sdk,
// pinned in package-lock.json): connect with a bearer key, list the tools,
// walk a collection to its end with walk_records, and call a tool for a
// restaurant the key has no grant for. The client checks every structured
// output against the tool's outputSchema and throws when it does not fit.
// Then the typed records: a walk page checked again against walk_records'
// outputSchema with the SDK's own validator (and a forged page whose record
// names no collection, which must fail it), each live record's data against
// the JSON Schema describe_collection gives for the collection (compiled
// with ajv's draft 2020-12 class, the dialect the schema declares), and
// describe_collection of an unknown collection.
// Prints one JSON summary on stdout; tests/mcp_node_test.go runs it and
// judges it.
//
// Usage: node .ci/mcp-client.mjs <endpoint> <key> <restaurant> <collection> <ungranted restaurant>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import Ajv2020 from "ajv/dist/2020.js";

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

const page = await client.callTool({
  name: "walk_records",
  arguments: { restaurantId: restaurant, collection, limit: 100 },
});
const walkTool = tools.find((t) => t.name === "walk_records");
const checkPage = new AjvJsonSchemaValidator().getValidator(walkTool.outputSchema);
const forged = structuredClone(page.structuredContent);
forged.data[0].collection = "fridges";

const described = await client.callTool({ name: "describe_collection", arguments: { collection } });
if (described.isError) {
  throw new Error(`describe_collection failed: ${described.content[0].text}`);
}
const checkData = new Ajv2020({ strict: false, allErrors: true }).compile(described.structuredContent.dataSchema);
const live = page.structuredContent.data.filter((r) => !r.deleted);
const invalid = live.filter((r) => !checkData(r.data)).map((r) => ({ id: r.id, errors: checkData.errors }));
const unknown = await client.callTool({ name: "describe_collection", arguments: { collection: "fridges" } });

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion,
  server: client.getServerVersion(),
  tools: tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint === true })),
  pages,
  ids,
  ungranted: { isError: refused.isError === true, text: refused.content.map((c) => c.text).join("\n") },
  typed: {
    pageValid: checkPage(page.structuredContent).valid,
    forgedValid: checkPage(forged).valid,
    described: described.structuredContent.collection,
    liveChecked: live.length,
    invalid,
    extraMemberValid: checkData({ ...live[0].data, notAMember: true }),
    unknown: { isError: unknown.isError === true, text: unknown.content.map((c) => c.text).join("\n") },
  },
}));
await client.close();
