package wire

import (
	"encoding/json"
	"testing"
)

// A records feed page appends the JSON encoding/json writes: records and
// deliveries of several restaurants, the streams ended, both cursors.
func TestRecordFeedPageAppendJSONMatchesEncodingJSON(t *testing.T) {
	tricky := "é \"quoted\" \\ \n\t\x01 <script> & \u2028\u2029 😀"
	next, sv := "c.1-_", "4.2"
	rec := func(r, id string) *Envelope {
		return &Envelope{ID: id, RestaurantID: r, Collection: "areas", Data: json.RawMessage(`{"name":"x","isDeleted":false}`),
			CapturedAt: 1, ReceivedAt: 2, Sequence: 3, MutationID: "m", SourceVersion: &sv, PayloadVersion: 1, StateKind: StateKind}
	}
	pages := []RecordFeedPage{
		{Data: []RecordFeedItem{}, Streams: []RecordFeedStream{}, ChangesCursor: &next},
		{Data: []RecordFeedItem{
			{RestaurantID: "r1", Stream: "areas", Record: rec("r1", "a1")},
			{RestaurantID: "r1", Stream: "areas", Record: &Envelope{ID: tricky, RestaurantID: "r1", Collection: "areas", Deleted: true, StateKind: StateKind}},
			{RestaurantID: "r1", Stream: "deliveries", Delivery: &Delivery{ID: "d1", RestaurantID: "r1", Supplier: Supplier{ID: "s", Name: tricky},
				TemperatureRecords: []TemperatureRecord{{Product: "p", Value: "3.5"}}, NonComplianceReasons: []string{}, CorrectiveActions: []string{}}},
			{RestaurantID: "r2", Stream: "areas", Record: rec("r2", "a1")},
		}, Streams: []RecordFeedStream{{RestaurantID: "r1", Stream: "areas", Head: 9, ChangesCursor: "c"}, {RestaurantID: tricky, Stream: "deliveries", ChangesCursor: "d"}},
			NextCursor: &next},
	}
	appendsAsEncodingJSON(t, pages)
	if _, err := (RecordFeedPage{Data: []RecordFeedItem{{RestaurantID: "bad\xff"}}}).AppendJSON(nil); err == nil {
		t.Error("invalid UTF-8 was written")
	}
}
