// Type-checked (tsc --noEmit, never run) against the types openapi-typescript
// generates from the served OpenAPI document (make check-clients), with the
// openapi-fetch client partners use. It stops compiling when what a partner
// gets regresses: a record no longer narrowed to its collection's shape by
// `collection` (or a feed item by `stream`), a typed snapshot no longer
// checked against its collection's schema, an operation or a member gone.
// It never tests which members a value has to learn its type.
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi";

type Schemas = components["schemas"];
type Envelope = Schemas["Envelope"];

const client = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });

// Reading records: `collection` narrows an envelope to its collection's
// type (a discriminated union), with no test of members.
function describe(e: Envelope): string {
  if (e.deleted || e.data === undefined) {
    return `${e.collection} ${e.id} deleted`;
  }
  switch (e.collection) {
    case "areas":
      return e.data.name; // AreasData
    case "temperature-records": {
      const value: number = e.data.value; // TemperatureRecordsData
      return `${e.data.equipmentId}: ${value} ${e.data.unit}`;
    }
    case "cleaning-task-pictures":
      return e.data.asset.objectKey; // CleaningTaskPicturesData
    default:
      return e.collection;
  }
}

export async function walkAreas(): Promise<string[]> {
  const { data, error } = await client.GET("/v1/restaurants/{restaurantId}/collections/{collection}/records", {
    params: { path: { restaurantId: "bistro-42", collection: "areas" }, query: { limit: 100 } },
  });
  if (error !== undefined || data === undefined) {
    return [];
  }
  return data.data.map(describe);
}

// The records feed: `stream` narrows an item to a delivery or to one
// collection's record.
export async function feed(): Promise<string[]> {
  const { data } = await client.GET("/v1/records", { params: { query: { limit: 500 } } });
  const out: string[] = [];
  for (const item of data?.data ?? []) {
    if (item.stream === "deliveries") {
      out.push(item.delivery.supplier.name);
    } else if (item.stream === "areas" && item.record.data !== undefined) {
      const area: Schemas["AreasData"] = item.record.data;
      out.push(area.name);
    } else {
      out.push(describe(item.record));
    }
  }
  return out;
}

// Building a typed temperature-records snapshot: the per-collection ingest
// operation takes a TemperatureRecordsSnapshot, whose data must be a
// TemperatureRecordsData (a missing or misspelt member does not compile).
const reading: Schemas["TemperatureRecordsData"] = {
  equipmentId: "fridge-1", shift: "MORNING", timestamp: "1763700000000", unit: "C", value: 5.6,
};
const snapshot: Schemas["TemperatureRecordsSnapshot"] = {
  id: "t-1", restaurantId: "bistro-42", mutationId: "m-1", payloadVersion: 1, capturedAt: "1763700000000",
  sourceVersion: null, deleted: false, data: reading,
};
export async function ingestReading(): Promise<number> {
  const { response } = await client.PUT(
    "/v1/ingest/restaurants/{restaurantId}/collections/temperature-records/records/{recordId}/mutations/{mutationId}",
    {
      params: {
        path: { restaurantId: "bistro-42", recordId: "t-1", mutationId: "m-1" },
        header: { "Idempotency-Key": "m-1" },
      },
      body: snapshot,
    },
  );
  return response.status;
}

// The generic route stays, for clients that pick the collection at run
// time.
export async function ingestAny(collection: Schemas["Envelope"]["collection"], body: Schemas["IngestSnapshot"]): Promise<number> {
  const { response } = await client.PUT(
    "/v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/mutations/{mutationId}",
    {
      params: {
        path: { restaurantId: "bistro-42", collection, recordId: body.id, mutationId: body.mutationId },
        header: { "Idempotency-Key": body.mutationId },
      },
      body,
    },
  );
  return response.status;
}

// Uploading the file a record's data.asset names: the required objectKey
// query parameter says which file the bytes are.
export async function uploadPhoto(bytes: Uint8Array, digest: string): Promise<number> {
  const { response } = await client.PUT(
    "/v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/asset",
    {
      params: {
        path: { restaurantId: "bistro-42", collection: "cleaning-task-pictures", recordId: "pic-1" },
        query: { objectKey: "photos/pic-1.jpg" },
        header: { "Repr-Digest": digest },
      },
      body: bytes,
      bodySerializer: (b: unknown) => b as Uint8Array,
      headers: { "Content-Type": "image/jpeg" },
    },
  );
  return response.status;
}

