package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RFC 8259 requires UTF-8: invalid bytes, overlong encodings and lone
// surrogate escapes are refused with a pointer to the string, on every
// JSON body, never silently rewritten to U+FFFD.
func TestBodiesMustBeUTF8(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write", "areas:read", "deliveries:write"))
	ingest := `{"id":"a1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,"data":{"name":"NAME","isDeleted":false}}`
	delivery := string(mustJSON(t, deliveryJSON("d1", 1000)))
	delivery = strings.Replace(delivery, `"commentary":"Driver late"`, `"commentary":"NAME"`, 1)
	session := `{"restaurantId":"NAME"}`
	bad := map[string]string{
		"invalid bytes":  "\xff\xfe",
		"overlong slash": "\xc0\xaf",
		"lone surrogate": `\ud800`,
		"lone low half":  `x\udc00y`,
	}
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				path, body, pointer string
				header              []string
			}{
				{ingestPath("r1", "areas", "a1", "m1"), strings.Replace(ingest, "NAME", b, 1), "/data/name", []string{"Idempotency-Key", "m1"}},
				{"/v1/ingest/restaurants/r1/deliveries/d1", strings.Replace(delivery, "NAME", b, 1), "/commentary", nil},
				{"/v1/mobile/sessions", strings.Replace(session, "NAME", b, 1), "/restaurantId", nil},
			} {
				r := a.putOrPost(key, tc.path, tc.body, tc.header...)
				p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
				require.Len(t, p.Errors, 1, "%s", r.Body)
				require.Equal(t, tc.pointer, p.Errors[0].Pointer, "%s", r.Body)
				require.Contains(t, p.Errors[0].Detail, "UTF-8")
			}
		})
	}
	// Nothing was stored: the record does not exist.
	requireProblem(t, a.getAs(key, recordsPath("r1", "areas")+"/a1"), http.StatusNotFound, "not-found")
	// A valid surrogate pair is fine.
	r := a.putOrPost(key, ingestPath("r1", "areas", "a1", "m1"), strings.Replace(ingest, "NAME", `\ud83e\udd5a`, 1), "Idempotency-Key", "m1")
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var out struct{ Data envelopeDoc }
	r.JSON(t, &out)
	require.JSONEq(t, `{"name":"🥚","isDeleted":false}`, string(out.Data.Data))
}

// A member given twice is ambiguous (RFC 8259: names SHOULD be unique);
// it is refused with its location rather than resolved by guessing.
func TestBodiesRefuseDuplicateNames(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "areas:write"))
	body := `{"id":"a1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,"data":{"name":"x","isDeleted":false,"name":"y"}}`
	p := requireProblem(t, a.putOrPost(key, ingestPath("r1", "areas", "a1", "m1"), body, "Idempotency-Key", "m1"), http.StatusBadRequest, "invalid-request")
	require.Equal(t, "/data/name", p.Errors[0].Pointer)
}

// Numbers carry through untouched (spec 2.5: "carry through untouched"):
// their text is kept, so precision and trailing zeros survive; a replay
// compares values, so 1.5 replays a mutation sent with 1.50.
func TestNumbersCarryThroughUntouched(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "cleaning-task-pictures:write", "cleaning-task-pictures:read", "deliveries:write", "deliveries:read"))
	body := func(part string) string {
		return `{"id":"p1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,` +
			`"data":{"timestamp":"1","part":` + part + `,"asset":{"objectKey":"k","status":"pending"}}}`
	}
	path := ingestPath("r1", "cleaning-task-pictures", "p1", "m1")
	for _, part := range []string{"12345678901234567890.123456789"} {
		r := a.putOrPost(key, path, body(part), "Idempotency-Key", "m1")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		require.Contains(t, string(r.Body), `"part":12345678901234567890.123456789`)
	}
	got := a.getAs(key, recordsPath("r1", "cleaning-task-pictures")+"/p1")
	require.Contains(t, string(got.Body), `"part":12345678901234567890.123456789`, "read back exactly")
	replay := a.putOrPost(key, path, body("0.12345678901234567890123456789e20"), "Idempotency-Key", "m1")
	require.Equal(t, http.StatusOK, replay.Status, "%s", replay.Body)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"), "the same value in other notation is a replay")
	requireProblem(t, a.putOrPost(key, path, body("12345678901234567890.12345678"), "Idempotency-Key", "m1"),
		http.StatusConflict, "conflict")

	path2 := ingestPath("r1", "cleaning-task-pictures", "p2", "m2")
	b2 := strings.NewReplacer(`"id":"p1"`, `"id":"p2"`, `"mutationId":"m1"`, `"mutationId":"m2"`).Replace(body("1.50"))
	r := a.putOrPost(key, path2, b2, "Idempotency-Key", "m2")
	require.Contains(t, string(r.Body), `"part":1.50`, "trailing zeros kept")
	b2again := strings.NewReplacer(`"id":"p1"`, `"id":"p2"`, `"mutationId":"m1"`, `"mutationId":"m2"`).Replace(body("1.5"))
	again := a.putOrPost(key, path2, b2again, "Idempotency-Key", "m2")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Contains(t, string(again.Body), `"part":1.50`, "a replay answers what was stored")

	// Deliveries too.
	d := string(mustJSON(t, deliveryJSON("d1", 1000)))
	d = strings.Replace(d, `"value":3.5`, `"value":3.50`, 1)
	dr := a.putOrPost(key, "/v1/ingest/restaurants/r1/deliveries/d1", d)
	require.Equal(t, http.StatusOK, dr.Status, "%s", dr.Body)
	require.Contains(t, string(a.getAs(key, "/v1/restaurants/r1/deliveries/d1").Body), `"value":3.50`)
	dAgain := a.putOrPost(key, "/v1/ingest/restaurants/r1/deliveries/d1", strings.Replace(d, `"value":3.50`, `"value":35e-1`, 1))
	require.Equal(t, http.StatusOK, dAgain.Status, "%s", dAgain.Body)
	require.Equal(t, "true", dAgain.Header.Get("Idempotent-Replayed"))
	require.Contains(t, string(dAgain.Body), `"value":3.50`)
}

// putOrPost sends a raw JSON body: POST for the session endpoint, PUT for
// the ingest paths.
func (a *app) putOrPost(key, path, body string, kv ...string) response {
	a.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	method := http.MethodPut
	if path == "/v1/mobile/sessions" {
		method = http.MethodPost
	}
	return a.do(req{Method: method, Path: path, Header: h, Body: strings.NewReader(body)})
}

// A body with a huge number of violations gets a bounded answer: the first
// 100 are listed and the rest counted. (A body past the bounds of every
// schema, such as thousands of unknown members, is refused before
// validation with one violation: TestHostileBodiesMemory.)
func TestProblemErrorsAreCapped(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	a.addRestaurants("r1")
	key := a.newKey(grant("r1", "temperature-records:write"))
	actions := strings.TrimSuffix(strings.Repeat("1,", 1000), ",")
	body := `{"id":"t1","restaurantId":"r1","mutationId":"m1","payloadVersion":1,"capturedAt":"1","sourceVersion":null,"deleted":false,` +
		`"data":{"timestamp":"1","value":1,"unit":"C","shift":"MORNING","equipmentId":"e1","correctiveActions":[` + actions + `]}}`
	r := a.putOrPost(key, ingestPath("r1", "temperature-records", "t1", "m1"), body, "Idempotency-Key", "m1")
	p := requireProblem(t, r, http.StatusBadRequest, "invalid-request")
	require.Len(t, p.Errors, 100)
	var doc struct {
		ErrorsOmitted int `json:"errorsOmitted"`
	}
	r.JSON(t, &doc)
	require.Equal(t, 1000-100, doc.ErrorsOmitted)
	require.Contains(t, p.Detail, "1000 violation(s)")
	require.Less(t, len(r.Body), 64<<10, "the answer stays small")
}
