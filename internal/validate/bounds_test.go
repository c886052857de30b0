package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/apperr"
)

// Bounds refuses each shape no body can have, pointing at the array or
// object that crossed the bound, and lets everything else through,
// malformed JSON included (the decoder then says what is wrong with it).
func TestBounds(t *testing.T) {
	t.Parallel()
	list := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	members := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"m%d":0`, i)
		}
		return b.String() + "}"
	}
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "0" + strings.Repeat("}", n) }
	for _, tc := range []struct {
		body    string
		refused bool
		pointer string
	}{
		{`{"data":{"x":` + list(MaxItems, "0") + `}}`, false, ""},
		{`{"data":{"x":` + list(MaxItems+1, "0") + `}}`, true, "/data/x"},
		{list(MaxItems+1, "{}"), true, ""},
		{`{"a":[` + list(MaxItems+1, `"s"`) + `]}`, true, "/a/0"},
		{`{"data":` + members(MaxMembers) + `}`, false, ""},
		{`{"data":` + members(MaxMembers+1) + `}`, true, "/data"},
		{members(MaxMembers + 1), true, ""},
		{deep(MaxDepth), false, ""},
		{deep(MaxDepth + 1), true, strings.Repeat("/a", MaxDepth)},
		{`{"a":` + list(MaxItems, list(MaxValues/MaxItems, "0")) + `}`, true, "/a/990"},
		{`{"x":[0,0,`, false, ""},
		{`not json`, false, ""},
		{``, false, ""},
	} {
		err := Bounds([]byte(tc.body))
		name := fmt.Sprintf("%.60s (%d bytes)", tc.body, len(tc.body))
		if !tc.refused {
			require.NoError(t, err, name)
			continue
		}
		e, ok := apperr.As(err)
		require.True(t, ok, "%s: %v", name, err)
		require.Equal(t, apperr.Invalid, e.Code)
		require.Len(t, e.Errors, 1)
		require.Equal(t, tc.pointer, e.Errors[0].Pointer, name)
	}
}

// Bounds reads in place: its allocations do not grow with the body.
func TestBoundsDoesNotAllocatePerValue(t *testing.T) {
	pairs := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat(`"abc",{"b":1.5},`, n), ",") + "]" }
	small := []byte(`{"a":` + pairs(1) + `}`)
	big := []byte(`{"a":` + pairs(499) + `,"b":` + pairs(499) + `,"c":` + pairs(499) + `,"d":` + pairs(499) + `}`)
	s := testing.AllocsPerRun(20, func() { _ = Bounds(small) })
	b := testing.AllocsPerRun(20, func() { _ = Bounds(big) })
	require.Equal(t, s, b, "allocations for 6 values and for 6,000")
}

// The fullest valid body (a restaurants record with every list at its
// 1000 items) is within every bound, far from MaxValues, and valid.
func TestFullestValidBodyIsWithinBounds(t *testing.T) {
	t.Parallel()
	texts := func() []string {
		out := make([]string, MaxItems)
		for i := range out {
			out[i] = "t"
		}
		return out
	}
	closures := make([]map[string]any, MaxItems)
	subs := make([]map[string]any, MaxItems)
	for i := range closures {
		closures[i] = map[string]any{"from": "1", "to": "2"}
		subs[i] = map[string]any{"name": "n", "dateRange": map[string]any{"from": "1", "to": "2"}}
	}
	addr := map[string]any{"street": "s", "city": "c", "postalCode": "p", "country": "c", "formattedAddress": "f",
		"streetNumber": "1", "contactFirstName": "a", "contactLastName": "b", "phoneNumber": "0"}
	data := map[string]any{
		"name": "n", "address": "a", "closingDays": texts(), "exceptionalClosures": closures, "subscriptions": subs,
		"companyName": "c", "billingAddress": "b", "tvaNumber": "t", "billingEmail": "e", "trialEndDate": "1",
		"detailedAddress": addr, "deliveryDetailedAddress": addr, "deliveryAddress": "d", "customerId": "c1",
		"settings": map[string]any{
			"global": map[string]any{"lockPastDates": true, "multiUser": true, "exportDataRecipients": texts(),
				"oneTimeExportRecipients": texts(), "exportSchedule": map[string]any{"enabled": true, "frequency": "f",
					"dayOfWeek": 1, "dayOfMonth": 1, "format": "f"}, "sensorAlertRecipients": texts(), "temperatureUnit": "C",
				"reportsEnabled": true, "reportRecipients": texts(), "reportWeekday": 1},
			"temperatureRecords": map[string]any{"recordsPerDay": 2},
			"delivery": map[string]any{"recordTemperatures": true, "detailsOnCompliantDelivery": true, "autoOpenClaim": true,
				"allowGalleryUpload": true},
			"traceability": map[string]any{"displayCommentary": true, "performanceMode": true, "allowGalleryUpload": true},
			"cleaning":     map[string]any{"requirePhotoProof": true, "allowGalleryUpload": true},
			"photo":        map[string]any{"performanceMode": true},
			"sensor":       map[string]any{"isAvailable": true, "isActivated": true, "beginDate": "1"},
			"labels":       map[string]any{"isActivated": true}, "preparations": map[string]any{"displayAllergens": true},
			"fryerChecks": map[string]any{"recordTestValue": true}, "cookingTemperatureRecords": map[string]any{"recordsPerDay": 2},
		},
		"subscription":      map[string]any{"isSubscribed": true, "dunningInvoiceId": "d1", "paymentFailedAt": "1", "remindersSent": 1},
		"preferredLanguage": "fr", "multiArea": true, "discount": "d",
	}
	body, err := json.Marshal(map[string]any{"id": "r1", "restaurantId": "r1", "mutationId": "m1", "capturedAt": "1",
		"sourceVersion": nil, "payloadVersion": 1, "deleted": false, "data": data})
	require.NoError(t, err)
	require.NoError(t, Bounds(body))
	tokens := 0
	d := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		if k := tok.Kind(); k != ']' && k != '}' {
			tokens++
		}
	}
	t.Logf("the fullest restaurants record: %d bytes, %d names and values", len(body), tokens)
	require.Less(t, tokens, MaxValues/4)
	set, err := Load()
	require.NoError(t, err)
	doc, err := Decode(body)
	require.NoError(t, err)
	require.Empty(t, set.Validate("ingest", doc, ""))
	require.Empty(t, set.Validate("restaurants.data", doc["data"], "/data"))
}
