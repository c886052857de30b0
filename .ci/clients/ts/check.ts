// Type-checked (tsc --noEmit, never run) against the types openapi-typescript
// generates from the served OpenAPI document (make check-clients), with the
// openapi-fetch client partners use. It stops compiling when what a partner
// gets regresses: record data typed as Record<string, never> or missing
// the named shapes, an operation or a member gone.
import createClient from "openapi-fetch";
import type { components, paths } from "./openapi";

type Schemas = components["schemas"];
type Envelope = Schemas["Envelope"];

const client = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });

// Each named shape is a member of the union that `data` is.
const area: Schemas["AreasData"] = { name: "Cold room", isDeleted: false };
const asData: NonNullable<Envelope["data"]> = area;

// Reading data.name of an areas record: narrow by collection, then by shape.
function areaName(e: Envelope): string | undefined {
  if (e.collection !== "areas" || e.data === undefined || !("name" in e.data)) {
    return undefined;
  }
  const name: string = e.data.name;
  return name;
}

export async function walkAreas(): Promise<string[]> {
  const { data, error } = await client.GET("/v1/restaurants/{restaurantId}/collections/{collection}/records", {
    params: { path: { restaurantId: "bistro-42", collection: "areas" }, query: { limit: 100 } },
  });
  if (error !== undefined || data === undefined) {
    return [];
  }
  return data.data.map(areaName).filter((n): n is string => n !== undefined);
}

// Building a temperature-records ingest body.
const reading: Schemas["TemperatureRecordsData"] = {
  equipmentId: "fridge-1", shift: "MORNING", timestamp: "1763700000000", unit: "C", value: 5.6,
};
const snapshot: Schemas["IngestSnapshot"] = {
  id: "t-1", restaurantId: "bistro-42", mutationId: "m-1", payloadVersion: 1, capturedAt: "1763700000000",
  sourceVersion: null, deleted: false, data: reading,
};
export async function ingestReading(): Promise<number> {
  const { response } = await client.PUT(
    "/v1/ingest/restaurants/{restaurantId}/collections/{collection}/records/{recordId}/mutations/{mutationId}",
    {
      params: {
        path: { restaurantId: "bistro-42", collection: "temperature-records", recordId: "t-1", mutationId: "m-1" },
        header: { "Idempotency-Key": "m-1" },
      },
      body: snapshot,
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

export { asData };
