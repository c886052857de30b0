package openapi

import "github.com/getkin/kin-openapi/openapi3"

func example(summary string, v any) *openapi3.ExampleRef {
	return &openapi3.ExampleRef{Value: &openapi3.Example{Summary: summary, Value: v}}
}

// examples are the component examples request and response bodies use;
// each one validates against its schema (the linter checks it).
func examples() openapi3.Examples {
	area := map[string]any{"name": "Cold room", "isDeleted": false}
	envelope := map[string]any{
		"id": "area-7", "restaurantId": "bistro-42", "collection": "areas", "data": area, "deleted": false,
		"capturedAt": "1763700000000", "receivedAt": "1763700012345", "sequence": "1043", "mutationId": "m-9f2c1",
		"sourceVersion": nil, "payloadVersion": 1, "stateKind": "received-shadow-snapshot",
	}
	tombstone := map[string]any{
		"id": "area-3", "restaurantId": "bistro-42", "collection": "areas", "deleted": true,
		"capturedAt": "1763700100000", "receivedAt": "1763700100500", "sequence": "1044", "mutationId": "m-9f2c2",
		"sourceVersion": nil, "payloadVersion": 1, "stateKind": "received-shadow-snapshot",
	}
	return openapi3.Examples{
		"DeliveryBody": example("A delivery check with two measurements", map[string]any{
			"id": "del-2026-11-21-001", "occurredAt": "1763712000000", "isCompliant": false,
			"supplier": map[string]any{"id": "sup-fresh-farm", "name": "Fresh Farm Ltd"},
			"temperatureRecords": []any{
				map[string]any{"product": "Chicken breast", "lotNumber": "L-2211", "unit": "°C", "value": 3.5},
				map[string]any{"product": "Natural yoghurt", "lotNumber": "Y-9", "unit": "°C", "value": 6.8},
			},
			"nonComplianceReasons": []any{"Yoghurt above 6 °C"}, "correctiveActions": []any{"Refused the yoghurt crate"},
			"commentary": "Driver late", "imageCount": 2,
		}),
		"AreaSnapshot": example("A live record", map[string]any{
			"id": "area-7", "restaurantId": "bistro-42", "mutationId": "m-9f2c1", "payloadVersion": 1,
			"capturedAt": "1763700000000", "sourceVersion": nil, "deleted": false, "data": area,
		}),
		"EnvelopePage": example("A page of a walk, with a tombstone", map[string]any{
			"data": []any{envelope, tombstone}, "nextCursor": "eyJ2IjoxfQ", "changesCursor": nil,
		}),
		"SessionNarrow": example("A token for one restaurant and one scope", map[string]any{
			"restaurantId": "bistro-42", "scopes": []any{"cleaning-task-pictures:write"},
		}),
		"SessionIssued": example("An issued session", map[string]any{
			"accessToken": "fst_k3v7q2m9x4t8w1za.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCdE", "tokenType": "Bearer",
			"expiresAt":   "1763715600000",
			"restaurants": []any{map[string]any{"restaurantId": "bistro-42", "scopes": []any{"cleaning-task-pictures:write"}}},
		}),
	}
}
