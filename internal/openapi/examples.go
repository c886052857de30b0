package openapi

import (
	"maps"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/examples"
)

func example(summary string, v any) *openapi3.ExampleRef {
	return &openapi3.ExampleRef{Value: &openapi3.Example{Summary: summary, Value: v}}
}

// The examples name what internal/examples holds and the demo loads, so an
// example request is one that succeeds against the demo data: reads name
// records the demo has, writes replay what it wrote. The shared parameter
// examples name the drive-files example record, whose file the upload and
// asset examples carry, and the example delivery and its photograph.
var paramExamples = map[string]any{
	"restaurantId":           examples.Restaurant,
	"collection":             examples.FileCollection,
	"fileCollection":         examples.FileCollection,
	"recordId":               examples.FileRecord,
	"mutationId":             examples.Of(examples.FileCollection).MutationID,
	"IdempotencyKey":         examples.Of(examples.FileCollection).MutationID,
	"objectKey":              examples.FileObjectKey,
	"ReprDigest":             examples.Digest(examples.File()),
	"deliveryId":             examples.DeliveryID,
	"imageId":                examples.ImageID,
	"uploadId":               "k7qzc2v4nmt3xq6yb5wlr8jd2e",
	"UploadOffset":           "0",
	"UploadCompleteRequired": "?1",
	"sha256":                 examples.SHA256(examples.File()),
	"from":                   examples.WindowFrom,
	"to":                     examples.WindowTo,
	"docFile":                "swagger-ui-bundle.js",
	"code":                   "rate-limit-exceeded",
	// The MCP example is a tools/call of protocol 2026-07-28, which
	// names its method and tool in headers.
	"McpProtocolVersion": "2026-07-28",
	"McpMethod":          "tools/call",
	"McpName":            "get_record",
}

// withParamExamples gives each parameter component its example.
func withParamExamples(ps openapi3.ParametersMap) openapi3.ParametersMap {
	for name, ex := range paramExamples {
		if p := ps[name]; p != nil && p.Value != nil {
			p.Value.Example = ex
		}
	}
	return ps
}

// SnapshotParamExamples are the parameter examples of a collection's
// typed ingest: its example record's id and mutation.
func SnapshotParamExamples(collection string) map[string]any {
	r := examples.Of(collection)
	return map[string]any{"recordId": r.ID, "mutationId": r.MutationID, "IdempotencyKey": r.MutationID}
}

// PhotoParamExamples are the parameter examples of the delivery
// photograph's upload: its digest.
func PhotoParamExamples() map[string]any {
	return map[string]any{"ReprDigest": examples.Digest(examples.Photo())}
}

// examples are the component examples request and response bodies use;
// each one validates against its schema (the linter checks it).
func componentExamples() openapi3.Examples {
	file := examples.Of(examples.FileCollection)
	stored := maps.Clone(file.Data)
	stored["asset"] = map[string]any{"objectKey": examples.FileObjectKey, "status": "uploaded", "contentType": examples.FileType,
		"byteLength": len(examples.File()), "sha256": examples.SHA256(examples.File())}
	envelope := map[string]any{
		"id": file.ID, "restaurantId": examples.Restaurant, "collection": file.Collection, "data": stored, "deleted": false,
		"capturedAt": examples.CapturedAt, "receivedAt": "1763712012345", "sequence": "1043", "mutationId": "upload~" + examples.SHA256(examples.File())[:32],
		"sourceVersion": nil, "payloadVersion": 1, "stateKind": "received-shadow-snapshot",
	}
	tombstone := map[string]any{
		"id": "doc-old-menu", "restaurantId": examples.Restaurant, "collection": file.Collection, "deleted": true,
		"capturedAt": "1763712100000", "receivedAt": "1763712100500", "sequence": "1044", "mutationId": "m-9f2c2",
		"sourceVersion": nil, "payloadVersion": 1, "stateKind": "received-shadow-snapshot",
	}
	out := openapi3.Examples{
		"DeliveryBody": example("A delivery check with two measurements (the demo's)", examples.Delivery()),
		"EnvelopePage": example("A page of a walk, with a tombstone", map[string]any{
			"data": []any{envelope, tombstone}, "nextCursor": "eyJ2IjoxfQ", "changesCursor": nil,
		}),
		"SessionNarrow": example("A token for one restaurant and one scope", map[string]any{
			"restaurantId": examples.Restaurant, "scopes": []any{"cleaning-task-pictures:write"},
		}),
		"SessionIssued": example("An issued session", map[string]any{
			"accessToken": "fst_k3v7q2m9x4t8w1za.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdE", "tokenType": "Bearer",
			"expiresAt":   "1763715600000",
			"restaurants": []any{map[string]any{"restaurantId": examples.Restaurant, "scopes": []any{"cleaning-task-pictures:write"}}},
		}),
		"McpCall": example("Call get_record (protocol 2026-07-28 needs no handshake)", map[string]any{
			"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "get_record", "arguments": map[string]any{
				"restaurantId": examples.Restaurant, "collection": file.Collection, "recordId": file.ID},
				"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": map[string]any{}}},
		}),
		"McpNotification": example("A notification: accepted (202), no answer", map[string]any{
			"jsonrpc": "2.0", "method": "notifications/initialized"}),
		"AssetFile": example("The drive-files example's file (text/plain)", string(examples.File())),
	}
	out["IngestBatch"] = example("Two snapshots and a delivery (the demo's: each replays)", map[string]any{"items": []any{
		map[string]any{"collection": file.Collection, "snapshot": file.Snapshot()},
		map[string]any{"collection": "temperature-readings", "snapshot": examples.Of("temperature-readings").Snapshot()},
		map[string]any{"collection": catalog.DeliveryStream, "delivery": examples.Delivery()},
	}})
	for _, c := range catalog.Collections {
		r := examples.Of(c.Name)
		out[CollectionSchema("Snapshot", c.Name)] = example("A live "+c.Name+" record (the demo's)", r.Snapshot())
	}
	return out
}
