package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// numberForms is a number in every form JSON's grammar allows (RFC 8259
// section 6): signs, zeros, fractions, exponents in both cases with and
// without a sign, values at a double's limits and digits far beyond its
// precision, up to the 10,000-character cap.
func numberForms() []string {
	return []string{
		"0", "-0", "0.0", "-0.0", "7", "-7", "0.1", "1.50", "100",
		"1e2", "1E2", "1e+2", "1E+2", "1e-7", "1E-7", "-2.5e-3", "2.50E+10", "0e0", "-0.0e-0",
		"1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "2.2250738585072014e-308",
		"9007199254740993", "123456789012345678901234567890",
		"1" + strings.Repeat("234567890", 33) + "12", // a 300-digit integer
		"3." + strings.Repeat("1415926535", 30),      // a 300-digit fraction
		"0." + strings.Repeat("9", 9998),             // 10,000 characters
	}
}

// dataOf is the data member of an envelope, as its bytes appear in the
// answer.
func dataOf(t testing.TB, envelope []byte) string {
	t.Helper()
	var e struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(envelope, &e), "%s", envelope)
	return string(e.Data)
}

// mcpStructured is the structured output of the last tools/call, as its
// bytes appear on the wire (the SDK client decodes numbers into float64,
// so its result cannot show them).
func mcpStructured(t testing.TB, s *mcpSession) []byte {
	t.Helper()
	s.wire.mu.Lock()
	var body []byte
	for i := len(s.wire.exchanges) - 1; i >= 0 && body == nil; i-- {
		if bytes.Contains(s.wire.exchanges[i].Body, []byte(`"tools/call"`)) {
			body = s.wire.exchanges[i].RBody
		}
	}
	s.wire.mu.Unlock()
	if i := bytes.Index(body, []byte("data: ")); i >= 0 { // an event stream
		body = body[i+len("data: "):]
		if j := bytes.IndexByte(body, '\n'); j >= 0 {
			body = body[:j]
		}
	}
	var rpc struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(body, &rpc), "%s", body)
	require.NotEmpty(t, rpc.Result.StructuredContent, "%s", body)
	return rpc.Result.StructuredContent
}

// A record's data reads back as the bytes the client sent, whatever form
// its numbers take: in the ingest answer and its replay, a single read, a
// walk page, and both MCP tools. Replays still compare values (1E+2 and
// 100 are the same request) and answer what was stored first.
func TestDataReadsBackAsSent(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cooking-equipment:write", "cooking-equipment:read"))
	const collection = "cooking-equipment"
	body := func(id, data string) string {
		return `{"id":"` + id + `","restaurantId":"r1","mutationId":"m-` + id + `","payloadVersion":1,"capturedAt":"1",` +
			`"sourceVersion":null,"deleted":false,"data":` + data + `}`
	}
	sent := map[string]string{}
	for i, n := range numberForms() {
		id := fmt.Sprintf("n%02d", i)
		data := `{"name":"S, : \" \u00e9","isDeleted":false,"min":` + n + `,"max":null}`
		sent[id] = data
		r := a.putOrPost(key, ingestPath("r1", collection, id, "m-"+id), body(id, data), "Idempotency-Key", "m-"+id)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", n, r.Body)
		require.Equal(t, data, dataOf(t, mustData(t, r.Body)), "ingest answer of %s", n)

		replay := a.putOrPost(key, ingestPath("r1", collection, id, "m-"+id), body(id, data), "Idempotency-Key", "m-"+id)
		require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"), "%s", n)
		require.Equal(t, data, dataOf(t, mustData(t, replay.Body)), "replay of %s", n)

		got := a.getAs(key, recordsPath("r1", collection)+"/"+id)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
		require.Equal(t, data, dataOf(t, got.Body), "single read of %s", n)
	}

	// Member order is the client's; whitespace between tokens is dropped.
	spaced := "{ \"max\" : null ,\n\t\"min\" : 1E+2 , \"name\" : \"x\", \"isDeleted\":false }"
	r := a.putOrPost(key, ingestPath("r1", collection, "ws", "m-ws"), body("ws", spaced), "Idempotency-Key", "m-ws")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	sent["ws"] = `{"max":null,"min":1E+2,"name":"x","isDeleted":false}`
	require.Equal(t, sent["ws"], dataOf(t, mustData(t, r.Body)))
	// The same value in other notation and another order is the same
	// request: a replay, answered with what was stored.
	other := a.putOrPost(key, ingestPath("r1", collection, "ws", "m-ws"), body("ws", `{"isDeleted":false,"name":"x","min":100,"max":null}`),
		"Idempotency-Key", "m-ws")
	require.Equal(t, "true", other.Header.Get("Idempotent-Replayed"), "%s", other.Body)
	require.Equal(t, sent["ws"], dataOf(t, mustData(t, other.Body)))

	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	walked := a.getAs(key, recordsPath("r1", collection)+"?limit=100")
	require.Equal(t, http.StatusOK, walked.Status, "%s", walked.Body)
	require.NoError(t, json.Unmarshal(walked.Body, &page))
	require.Len(t, page.Data, len(sent))
	for _, e := range page.Data {
		var id struct{ ID string }
		require.NoError(t, json.Unmarshal(e, &id))
		require.Equal(t, sent[id.ID], dataOf(t, e), "walk, record %s", id.ID)
	}

	s := a.mcpConnect(t, key, rev2026)
	s.ok("walk_records", map[string]any{"restaurantId": "r1", "collection": collection, "limit": 100})
	page.Data = nil
	require.NoError(t, json.Unmarshal(mcpStructured(t, s), &page))
	require.Len(t, page.Data, len(sent))
	for _, e := range page.Data {
		var id struct{ ID string }
		require.NoError(t, json.Unmarshal(e, &id))
		require.Equal(t, sent[id.ID], dataOf(t, e), "walk_records, record %s", id.ID)
	}
	for _, id := range []string{"n03", "n12", "n26", "ws"} {
		s.ok("get_record", map[string]any{"restaurantId": "r1", "collection": collection, "recordId": id})
		require.Equal(t, sent[id], dataOf(t, mcpStructured(t, s)), "get_record %s", id)
	}
}

// A file-carrying record keeps the client's data as sent around the asset
// the service owns: the members it rewrites are data.asset's alone.
func TestAssetRecordKeepsDataAsSent(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-task-pictures:write", "cleaning-task-pictures:read"))
	data := `{"part":-0.0,"asset":{"status":"uploaded","objectKey":"k"},"timestamp":"1","groupId":null}`
	b := `{"id":"p1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,"data":` + data + `}`
	r := a.putOrPost(key, ingestPath("r1", "cleaning-task-pictures", "p1", "m1"), b, "Idempotency-Key", "m1")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	want := `{"part":-0.0,"asset":{"objectKey":"k","status":"pending"},"timestamp":"1","groupId":null}`
	require.Equal(t, want, dataOf(t, mustData(t, r.Body)))
	require.Equal(t, want, dataOf(t, a.getAs(key, recordsPath("r1", "cleaning-task-pictures")+"/p1").Body))
}

// mustData is the data member of a write's answer ({"data": envelope}).
func mustData(t testing.TB, body []byte) []byte {
	t.Helper()
	var w struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &w), "%s", body)
	require.NotEmpty(t, w.Data, "%s", body)
	return w.Data
}

// Before migration 00013, and while sql/online/00013_data_as_received.sql
// converts a table, data is still jsonb: the store gets it back as jsonb's
// text (a space after each ':' and ','). The binary serves throughout, and
// the answer of a write is then what encoding/json wrote for it, compact,
// as it was before the answer was written by hand.
func TestWriteAnswerOnJSONBDataIsCompact(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	for _, table := range []string{"records", "record_changes"} {
		_, err := a.store().Pool().Exec(context.Background(), `ALTER TABLE `+table+` ALTER COLUMN data TYPE jsonb USING data::jsonb`)
		require.NoError(t, err)
	}
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cooking-equipment:write", "cooking-equipment:read"))
	const collection = "cooking-equipment"
	body := `{"id":"e1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1",` +
		`"sourceVersion":null,"deleted":false,"data":{"name":"a, b: c","isDeleted":false,"min":1.50,"max":null}}`
	for _, what := range []string{"applied", "replayed"} {
		r := a.putOrPost(key, ingestPath("r1", collection, "e1", "m1"), body, "Idempotency-Key", "m1")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Equal(t, what == "replayed", r.Header.Get("Idempotent-Replayed") == "true", what)
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, r.Body))
		require.Equal(t, compact.String()+"\n", string(r.Body), what)
		require.Equal(t, `{"max":null,"min":1.50,"name":"a, b: c","isDeleted":false}`, dataOf(t, mustData(t, r.Body)), what)
	}
}

// A delivery's temperature values read back with the text they were sent
// with, in every form JSON allows, as records' data does: in the write's
// answer and its replay, a single read, the list, the list in receive
// order and over MCP (migration 00019 made the column json; as jsonb it
// printed 1E+2 as 100 and -0.0 as 0.0).
func TestDeliveryNumbersReadBackAsSent(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:write", "deliveries:read"))
	values := map[string]string{}
	for i, n := range numberForms() {
		id := fmt.Sprintf("d%02d", i)
		plain := string(mustJSON(t, deliveryJSON(id, int64(1000+i))))
		require.Contains(t, plain, `"value":3.5`)
		sent := strings.Replace(plain, `"value":3.5`, `"value":`+n, 1)
		values[id] = n
		path := "/v1/ingest/restaurants/r1/deliveries/" + id
		for _, what := range []string{"answer", "replay"} {
			r := a.putRaw(key, path, "application/json", []byte(sent))
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", n, r.Body)
			require.Equal(t, what == "replay", r.Header.Get("Idempotent-Replayed") == "true", what)
			require.Equal(t, n, firstTemperature(t, mustData(t, r.Body)), "%s of %s", what, n)
		}
		got := a.getAs(key, "/v1/restaurants/r1/deliveries/"+id)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
		require.Equal(t, n, firstTemperature(t, got.Body), "single read of %s", n)
	}
	type page struct {
		Data []json.RawMessage `json:"data"`
	}
	checkPage := func(body []byte, where string) {
		t.Helper()
		var p page
		require.NoError(t, json.Unmarshal(body, &p), "%s", body)
		require.Len(t, p.Data, len(values), where)
		for _, d := range p.Data {
			var id struct{ ID string }
			require.NoError(t, json.Unmarshal(d, &id))
			require.Equal(t, values[id.ID], firstTemperature(t, d), "%s, delivery %s", where, id.ID)
		}
	}
	list := a.getAs(key, deliveriesPath("r1", window(0, 10000, 100)))
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	checkPage(list.Body, "list")
	changes := a.getAs(key, "/v1/restaurants/r1/delivery-changes?limit=100")
	require.Equal(t, http.StatusOK, changes.Status, "%s", changes.Body)
	checkPage(changes.Body, "delivery-changes")

	s := a.mcpConnect(t, key, rev2026)
	s.ok("list_deliveries", map[string]any{"restaurantId": "r1", "from": "0", "to": "10000", "limit": 100})
	checkPage(mcpStructured(t, s), "list_deliveries")
	s.ok("get_delivery", map[string]any{"restaurantId": "r1", "deliveryId": "d11"})
	require.Equal(t, values["d11"], firstTemperature(t, mcpStructured(t, s)), "get_delivery")

	// The column holds the text written, numbers as sent.
	var stored string
	require.NoError(t, a.store().Pool().QueryRow(context.Background(),
		`SELECT temperature_records::text FROM deliveries WHERE restaurant_id = 'r1' AND id = 'd11'`).Scan(&stored))
	require.Equal(t, `[{"product":"Chicken breast","lotNumber":"L-2211","unit":"°C","value":`+values["d11"]+`},`+
		`{"product":"Yoghurt","lotNumber":"Y-9","unit":"celsius","value":-1}]`, stored)
}

// firstTemperature is the text of the first temperature record's value of
// a delivery, as its bytes stand (the delivery itself, or {"data":
// delivery}).
func firstTemperature(t testing.TB, delivery []byte) string {
	t.Helper()
	var d struct {
		Data               json.RawMessage `json:"data"`
		TemperatureRecords []struct {
			Value json.RawMessage `json:"value"`
		} `json:"temperatureRecords"`
	}
	require.NoError(t, json.Unmarshal(delivery, &d), "%s", delivery)
	if len(d.TemperatureRecords) == 0 && len(d.Data) > 0 {
		return firstTemperature(t, d.Data)
	}
	require.NotEmpty(t, d.TemperatureRecords, "%s", delivery)
	return string(d.TemperatureRecords[0].Value)
}
