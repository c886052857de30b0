package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/wire"
)

// plainInteger is the form of an integer field on the wire.
var plainInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// integerMembers are the names of the integer fields of the spec (2.2,
// 2.5, 2.6) and of the collections whose fields it leaves to us.
var integerMembers = map[string]bool{"index": true, "recurrence": true, "remindersSent": true, "dayOfWeek": true,
	"dayOfMonth": true, "reportWeekday": true, "imageCount": true, "byteLength": true}

// integerTexts are the texts of the integer fields in a JSON document as
// its bytes stand, by JSON Pointer.
func integerTexts(t testing.TB, doc []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	d := jsontext.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.ReadToken()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, "%s", doc)
		if tok.Kind() != '0' {
			continue
		}
		ptr := string(d.StackPointer())
		if integerMembers[ptr[strings.LastIndexByte(ptr, '/')+1:]] {
			out[ptr] = tok.String()
		}
	}
}

// requirePlainIntegers fails unless every integer field of doc is in its
// plain form, and returns those fields' texts.
func requirePlainIntegers(t testing.TB, doc []byte, where string) map[string]string {
	t.Helper()
	got := integerTexts(t, doc)
	for ptr, text := range got {
		require.Regexp(t, plainInteger, text, "%s: %s in %s", where, ptr, doc)
	}
	return got
}

// Integer fields are integers on the wire whatever number form a device
// sent (1.0, 1E2, 2.50e1, -0.0, 0E0, -0): stored and served in their
// plain form in the ingest answer, its replay, a single read, a walk, a
// changes walk and both MCP record tools, while every other byte of data
// (a number field's 1.0, a string "1.0", member order) stays as sent. A
// replay compares values, so the mutation sent again in either form is
// the same request, and its digest is the one earlier releases stored for
// the same body: replays of changes stored before still match.
func TestIntegerFieldsServedAsIntegers(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-tasks:write", "cleaning-tasks:read", "equipment:write", "equipment:read",
		"restaurants:write", "restaurants:read"))
	body := func(id, mutation, data string) string {
		return `{"id":"` + id + `","restaurantId":"r1","mutationId":"` + mutation + `","payloadVersion":1,"capturedAt":"1",` +
			`"sourceVersion":null,"deleted":false,"data":` + data + `}`
	}
	type record struct{ collection, id, sent, stored string }
	var records []record
	for i, f := range []struct{ index, recurrence, wantIndex, wantRecurrence string }{
		{"1.0", "1E2", "1", "100"}, {"2.50e1", "-0.0", "25", "0"}, {"0E0", "-0", "0", "0"},
		{"120.0e-1", "7.000", "12", "7"}, {"9007199254740991.0", "-9.007199254740991E15", "9007199254740991", "-9007199254740991"},
		{"3", "4", "3", "4"},
	} {
		sent := `{"name":"1.0 \" ","index":` + f.index + `,"description":"index 1.0","recurrence":` + f.recurrence + `,"isDeleted":false}`
		stored := `{"name":"1.0 \" ","index":` + f.wantIndex + `,"description":"index 1.0","recurrence":` + f.wantRecurrence + `,"isDeleted":false}`
		records = append(records, record{"cleaning-tasks", fmt.Sprintf("task-%d", i), sent, stored})
	}
	records = append(records,
		record{"equipment", "fridge-1",
			`{"index":1.0,"type":"FRIDGE","name":"F","isDeleted":false,"min":1.0,"max":1E+1}`,
			`{"index":1,"type":"FRIDGE","name":"F","isDeleted":false,"min":1.0,"max":1E+1}`},
		record{"restaurants", "r1",
			`{"name":"B","address":"A","closingDays":[],"settings":{"global":{"exportSchedule":{"dayOfWeek":3.0,"dayOfMonth":1.5e1},` +
				`"reportWeekday":5E0},"temperatureRecords":{"recordsPerDay":2.0}},"subscription":{"remindersSent":-0.0}}`,
			`{"name":"B","address":"A","closingDays":[],"settings":{"global":{"exportSchedule":{"dayOfWeek":3,"dayOfMonth":15},` +
				`"reportWeekday":5},"temperatureRecords":{"recordsPerDay":2.0}},"subscription":{"remindersSent":0}}`},
	)
	stored := map[string]string{}
	for _, r := range records {
		m := "m-" + r.id
		path := ingestPath("r1", r.collection, r.id, m)
		res := a.putOrPost(key, path, body(r.id, m, r.sent), "Idempotency-Key", m)
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", r.sent, res.Body)
		require.Equal(t, r.stored, dataOf(t, mustData(t, res.Body)), "ingest answer of %s", r.sent)
		requirePlainIntegers(t, mustData(t, res.Body), "ingest answer")
		stored[r.collection+"/"+r.id] = r.stored

		// The same body again, and the same values in the plain form,
		// replay; both answer what was stored.
		for _, again := range []string{r.sent, r.stored} {
			replay := a.putOrPost(key, path, body(r.id, m, again), "Idempotency-Key", m)
			require.Equal(t, http.StatusOK, replay.Status, "%s", replay.Body)
			require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"), "replay of %s", again)
			require.Equal(t, r.stored, dataOf(t, mustData(t, replay.Body)), "replay of %s", again)
		}
		// The digest is what earlier releases computed for this body:
		// values, not text (wire.CanonicalJSON).
		canon, err := wire.CanonicalJSON([]byte(body(r.id, m, r.sent)))
		require.NoError(t, err)
		var digest []byte
		require.NoError(t, a.store().Pool().QueryRow(context.Background(),
			`SELECT request_sha256 FROM record_changes WHERE restaurant_id = 'r1' AND mutation_id = $1`, m).Scan(&digest))
		want := sha256.Sum256(canon)
		require.Equal(t, want[:], digest, "the request digest of %s", r.sent)

		got := a.getAs(key, recordsPath("r1", r.collection)+"/"+r.id)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
		require.Equal(t, r.stored, dataOf(t, got.Body), "single read")
		requirePlainIntegers(t, got.Body, "single read")
	}

	for _, collection := range []string{"cleaning-tasks", "equipment", "restaurants"} {
		walked := a.getAs(key, recordsPath("r1", collection)+"?limit=100")
		require.Equal(t, http.StatusOK, walked.Status, "%s", walked.Body)
		requirePlainIntegers(t, walked.Body, "walk")
		var page walkPage
		walked.JSON(t, &page)
		require.NotEmpty(t, page.Data)
		for _, e := range page.Data {
			require.Equal(t, stored[collection+"/"+e.ID], string(e.Data), "walk, %s", e.ID)
		}
		require.NotNil(t, page.ChangesCursor)

		// A changes walk serves the same text.
		tasks := collection + "/task-0"
		if collection != "cleaning-tasks" {
			continue
		}
		m := "m-again"
		res := a.putOrPost(key, ingestPath("r1", collection, "task-0", m),
			body("task-0", m, `{"name":"n","index":4.0E0,"recurrence":1,"isDeleted":false}`), "Idempotency-Key", m)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
		stored[tasks] = `{"name":"n","index":4,"recurrence":1,"isDeleted":false}`
		changed := a.getAs(key, recordsPath("r1", collection)+"?cursor="+*page.ChangesCursor)
		require.Equal(t, http.StatusOK, changed.Status, "%s", changed.Body)
		requirePlainIntegers(t, changed.Body, "changes walk")
		var changes walkPage
		changed.JSON(t, &changes)
		require.Len(t, changes.Data, 1)
		require.Equal(t, stored[tasks], string(changes.Data[0].Data))
	}

	s := a.mcpConnect(t, key, rev2026)
	for _, collection := range []string{"cleaning-tasks", "equipment", "restaurants"} {
		s.ok("walk_records", map[string]any{"restaurantId": "r1", "collection": collection, "limit": 100})
		out := mcpStructured(t, s)
		require.NotEmpty(t, requirePlainIntegers(t, out, "walk_records"), "%s", out)
		var page walkPage
		require.NoError(t, json.Unmarshal(out, &page))
		for _, e := range page.Data {
			require.Equal(t, stored[collection+"/"+e.ID], string(e.Data), "walk_records, %s", e.ID)
		}
	}
	s.ok("get_record", map[string]any{"restaurantId": "r1", "collection": "restaurants", "recordId": "r1"})
	out := mcpStructured(t, s)
	require.Len(t, requirePlainIntegers(t, out, "get_record"), 4, "%s", out)
	require.Equal(t, stored["restaurants/r1"], dataOf(t, out))
}

// A fraction in an integer field is a 400 pointing at the member, over
// ingest and for a delivery's imageCount; nothing is stored.
func TestIntegerFieldFractionIsRefused(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-tasks:write", "deliveries:write", "deliveries:read"))
	b := `{"id":"t1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,` +
		`"data":{"name":"n","index":1.5,"recurrence":1,"isDeleted":false}}`
	p := requireProblem(t, a.putOrPost(key, ingestPath("r1", "cleaning-tasks", "t1", "m1"), b, "Idempotency-Key", "m1"),
		http.StatusBadRequest, "invalid-request")
	require.Len(t, p.Errors, 1, "%+v", p.Errors)
	require.Equal(t, "/data/index", p.Errors[0].Pointer)

	d := strings.Replace(string(mustJSON(t, deliveryJSON("d1", 1000))), `"imageCount":2`, `"imageCount":1.5`, 1)
	require.Contains(t, d, `"imageCount":1.5`)
	p = requireProblem(t, a.putRaw(key, "/v1/ingest/restaurants/r1/deliveries/d1", "application/json", []byte(d)),
		http.StatusBadRequest, "invalid-request")
	require.Len(t, p.Errors, 1, "%+v", p.Errors)
	require.Equal(t, "/imageCount", p.Errors[0].Pointer)
	requireProblem(t, a.getAs(key, "/v1/restaurants/r1/deliveries/d1"), http.StatusNotFound, "not-found")
}

// A delivery whose imageCount is an integer in another number form
// (2.0, 1.5e1, 0E0, -0.0) is stored, not a 500: answered, read, listed
// and served over MCP as the plain integer; the same delivery sent again
// with the plain form replays it.
func TestDeliveryImageCountForms(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "deliveries:write", "deliveries:read"))
	for i, f := range []struct{ sent, want string }{{"2.0", "2"}, {"1.5e1", "15"}, {"0E0", "0"}, {"-0.0", "0"}, {"3", "3"}} {
		id := fmt.Sprintf("d%d", i)
		plain := string(mustJSON(t, deliveryJSON(id, int64(1000+i))))
		require.Contains(t, plain, `"imageCount":2`)
		sent := strings.Replace(plain, `"imageCount":2`, `"imageCount":`+f.sent, 1)
		path := "/v1/ingest/restaurants/r1/deliveries/" + id
		r := a.putRaw(key, path, "application/json", []byte(sent))
		require.Equal(t, http.StatusOK, r.Status, "imageCount %s: %s", f.sent, r.Body)
		require.Equal(t, map[string]string{"/data/imageCount": f.want}, requirePlainIntegers(t, r.Body, "delivery answer"))

		replay := a.putRaw(key, path, "application/json", []byte(strings.Replace(plain, `"imageCount":2`, `"imageCount":`+f.want, 1)))
		require.Equal(t, http.StatusOK, replay.Status, "%s", replay.Body)
		require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"), "imageCount %s replays %s", f.want, f.sent)

		got := a.getAs(key, "/v1/restaurants/r1/deliveries/"+id)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
		require.Equal(t, map[string]string{"/imageCount": f.want}, requirePlainIntegers(t, got.Body, "delivery read"))
	}
	list := a.getAs(key, deliveriesPath("r1", window(0, 10000, 100)))
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	require.Len(t, requirePlainIntegers(t, list.Body, "delivery list"), 5)

	s := a.mcpConnect(t, key, rev2026)
	s.ok("list_deliveries", map[string]any{"restaurantId": "r1", "from": "0", "to": "10000"})
	require.Len(t, requirePlainIntegers(t, mcpStructured(t, s), "list_deliveries"), 5)
	s.ok("get_delivery", map[string]any{"restaurantId": "r1", "deliveryId": "d1"})
	require.Equal(t, map[string]string{"/imageCount": "15"}, requirePlainIntegers(t, mcpStructured(t, s), "get_delivery"))
}
