package cursor_test

import (
	"slices"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/store"
)

// Cursors sealed before every kind moved into this package, with
// goldenKey at goldenNow. Clients keep changesCursors for months and
// delivery-changes and stream-changes cursors for as long as they poll:
// these must open for ever, and the same positions must still seal to the
// same bytes.
const (
	goldenKey             = "golden-cursor-key-0123456789abcdef"
	goldenChanges         = "eyJ2IjoxLCJrIjoiY2hhbmdlcyIsImIiOlsicjEiLCJhcmVhcyJdLCJwIjp7InMiOjQyfX3GwETlYvNjZg1CSMGDTlXbCKxEWK8XQplChiWR5oPKjw"
	goldenRecords         = "eyJ2IjoxLCJrIjoicmVjb3JkcyIsImIiOlsicjEiLCJhcmVhcyIsIjUwIl0sImUiOjE4MDAwODY0MDAsInAiOnsicCI6NDIsImEiOjcsInUiOjE4MDAwODY0MDB9fS9nY9upwH0eUTNvgPdFZGV--3JDygBhojmVI2rgMPea"
	goldenRecordsNoUntil  = "eyJ2IjoxLCJrIjoicmVjb3JkcyIsImIiOlsicjEiLCJhcmVhcyIsIjUwIl0sImUiOjE4MDAwODY0MDAsInAiOnsicCI6NDIsImEiOjd9fTxg7LMHI1iMOozR5rWG6R_d1QqyZmNY_39UuMk2jfSa"
	goldenDeliveries      = "eyJ2IjoxLCJrIjoiZGVsaXZlcmllcyIsImIiOlsicjEiLCIwIiwiMTAwMCJdLCJwIjp7Im8iOjkwMCwiaSI6ImQxIn19IMvzmJdWSdhKMKz1NZbFC11eOlALE8l2R0C0J3guLyw"
	goldenDeliveryChanges = "eyJ2IjoxLCJrIjoiZGVsaXZlcnktY2hhbmdlcyIsImIiOlsicjEiXSwicCI6eyJhIjo5fX2KSNBHWdR6aEnOzzKZF_qMzX2Fh8XvNOesoM6zxz46zw"
	goldenStreamChanges   = "eyJ2IjoxLCJrIjoic3RyZWFtLWNoYW5nZXMiLCJiIjpudWxsLCJwIjp7InMiOnsibiI6MTAwLCJ4IjoxMDUsImkiOlsxMDEsMTAzXX0sImYiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1NjcifX1Cso137cxRytBuADk13JQ6RHwHC0t-rldLEodwtnzUmQ"
	goldenStreamNext      = "eyJ2IjoxLCJrIjoic3RyZWFtLWNoYW5nZXMiLCJiIjpudWxsLCJwIjp7InMiOnt9LCJoIjp7Im4iOjExMCwieCI6MTEyfSwiciI6InIxIiwidCI6ImFyZWFzIiwiZiI6IjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2NyJ9fWR57NbUGdfWMiskz6i51Esb_yzV79-S0QvMI7JDGMi6"
	goldenReadable        = "0123456789abcdef01234567"
	// A records feed inside r1's areas (pinned at 42, after 7) and after
	// r1's deliveries, from a feed whose horizon is goldenStreamChanges'
	// snapshot.
	goldenFeedInside = "eyJ2IjoxLCJrIjoicmVjb3JkLWZlZWQiLCJiIjpudWxsLCJlIjoxODAwMDg2NDAwLCJwIjp7ImYiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1NjciLCJoIjp7Im4iOjEwMCwieCI6MTA1LCJpIjpbMTAxLDEwM119LCJyIjoicjEiLCJ0IjoiYXJlYXMiLCJpIjp0cnVlLCJwIjo0MiwiYSI6NywidSI6MTgwMDA4NjQwMH19MpwSBbPLyNDBOCaxDK-7EuSrX_g8d0ydZ3hkddFFAyA"
	goldenFeedAfter  = "eyJ2IjoxLCJrIjoicmVjb3JkLWZlZWQiLCJiIjpudWxsLCJlIjoxODAwMDg2NDAwLCJwIjp7ImYiOiIwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1NjciLCJoIjp7Im4iOjEwMCwieCI6MTA1LCJpIjpbMTAxLDEwM119LCJyIjoicjEiLCJ0IjoiZGVsaXZlcmllcyIsInUiOjE4MDAwODY0MDB9fcldQbJzOYenl3GjKemufgllGpcjW8zvxr73S8BwXCrC"
)

var goldenNow = time.Unix(1_800_000_000, 0)

// goldenIssuer reads and seals as the service does, with the golden key,
// at now.
func goldenIssuer(now time.Time) *cursor.Issuer {
	return cursor.NewIssuer(cursor.New([]byte(goldenKey), func() time.Time { return now }), 24*time.Hour, nil)
}

// The cursors that never expire open a century later, to the positions
// they were sealed with, and those positions seal to the same bytes.
func TestGoldenCursorsThatNeverExpire(t *testing.T) {
	later := goldenIssuer(goldenNow.Add(100 * 365 * 24 * time.Hour))
	same := func(name, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s seals to other bytes:\n got %s\nwant %s", name, got, want)
		}
	}

	t.Run("changesCursor of a collection walk", func(t *testing.T) {
		for _, limit := range []int{50, 7} { // bound without the limit
			w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: limit}
			from, err := later.OpenWalk(w, goldenChanges, true)
			if err != nil || !from.Changes || from.Since != 42 || from.After != nil {
				t.Fatalf("limit %d: %+v, %v", limit, from, err)
			}
			_, changes, err := later.SealWalk(w, from, nil, 42)
			if err != nil {
				t.Fatal(err)
			}
			same("changesCursor", *changes, goldenChanges)
		}
	})
	t.Run("delivery list", func(t *testing.T) {
		d := cursor.Deliveries{Restaurant: "r1", From: 0, To: 1000}
		pos, err := later.OpenDeliveries(d, goldenDeliveries, true)
		if err != nil || pos == nil || *pos != (store.DeliveryPos{OccurredAt: 900, ID: "d1"}) {
			t.Fatalf("%+v, %v", pos, err)
		}
		next, err := later.SealDeliveries(d, *pos)
		if err != nil {
			t.Fatal(err)
		}
		same("delivery cursor", next, goldenDeliveries)
	})
	t.Run("delivery changes", func(t *testing.T) {
		after, err := later.OpenDeliveryChanges("r1", goldenDeliveryChanges, true)
		if err != nil || after != 9 {
			t.Fatalf("%d, %v", after, err)
		}
		cur, err := later.SealDeliveryChanges("r1", 9)
		if err != nil {
			t.Fatal(err)
		}
		same("delivery changes cursor", cur, goldenDeliveryChanges)
	})
	t.Run("key-wide changes", func(t *testing.T) {
		from, err := later.OpenStreamChanges(goldenReadable, goldenStreamChanges, true)
		if err != nil {
			t.Fatal(err)
		}
		since := from.Since()
		if r, s := from.After(); since.Xmin != 100 || since.Xmax != 105 || !slices.Equal(since.Xip, []int64{101, 103}) || r != "" || s != "" {
			t.Fatalf("changesCursor: since %+v, after %q %q", since, r, s)
		}
		// The changesCursor of a listing pinned at that snapshot.
		first, err := later.OpenStreamChanges(goldenReadable, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := later.PinStreamChanges(&first, store.Snapshot{Xmin: 100, Xmax: 105, Xip: []int64{101, 103}}); err != nil {
			t.Fatal(err)
		}
		cur, err := later.SealStreamChanges(first, nil)
		if err != nil {
			t.Fatal(err)
		}
		same("changesCursor", cur, goldenStreamChanges)

		from, err = later.OpenStreamChanges(goldenReadable, goldenStreamNext, true)
		if err != nil {
			t.Fatal(err)
		}
		if r, s := from.After(); from.Since().Xmax != 0 || r != "r1" || s != "areas" {
			t.Fatalf("nextCursor: since %+v, after %q %q", from.Since(), r, s)
		}
		// The next page of a first listing pinned at 110..112.
		first, _ = later.OpenStreamChanges(goldenReadable, "", false)
		if err := later.PinStreamChanges(&first, store.Snapshot{Xmin: 110, Xmax: 112}); err != nil {
			t.Fatal(err)
		}
		cur, err = later.SealStreamChanges(first, &store.StreamHead{RestaurantID: "r1", Stream: "areas", Head: 3})
		if err != nil {
			t.Fatal(err)
		}
		same("nextCursor", cur, goldenStreamNext)
	})
}

// A walk's nextCursors, golden too, open within the walk's lifetime (and
// one issued before cursors carried the walk's end, within its own).
func TestGoldenWalkCursors(t *testing.T) {
	issuer := goldenIssuer(goldenNow.Add(time.Hour))
	w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 50}
	end := time.Unix(1_800_086_400, 0)
	for name, tok := range map[string]string{"with the walk's end": goldenRecords, "without": goldenRecordsNoUntil} {
		from, err := issuer.OpenWalk(w, tok, true)
		if err != nil || from.Changes || from.After == nil || *from.After != (store.WalkPos{Pinned: 42, After: 7}) || !from.Until.Equal(end) {
			t.Fatalf("%s: %+v, %v", name, from, err)
		}
	}
	next, _, err := issuer.SealWalk(w, cursor.WalkFrom{Until: end}, &store.WalkPos{Pinned: 42, After: 7}, 42)
	if err != nil || *next != goldenRecords {
		t.Fatalf("nextCursor seals to other bytes: %v %v", next, err)
	}
}

// The records feed's cursors, golden too: they open within their
// stream's lifetime to the positions sealed, those positions seal to the
// same bytes, and the feed's changesCursor is the GET /v1/changes cursor
// of its horizon. Past the lifetime they are refused as expired; for a
// key whose grants changed the feed starts over.
func TestGoldenRecordFeedCursors(t *testing.T) {
	issuer := goldenIssuer(goldenNow.Add(time.Hour))
	from, err := issuer.OpenRecordFeed(goldenReadable, goldenFeedInside, true)
	if err != nil || from.Fresh() {
		t.Fatalf("%+v, %v", from, err)
	}
	if at := from.At(); at.RestaurantID != "r1" || at.Stream != "areas" || at.In == nil || *at.In != (store.WalkPos{Pinned: 42, After: 7}) {
		t.Fatalf("inside: %+v", at)
	}
	// Still inside the same stream: the same lifetime, the same bytes.
	next, err := issuer.SealRecordFeed(from, store.FeedAt{RestaurantID: "r1", Stream: "areas", In: &store.WalkPos{Pinned: 42, After: 7}})
	if err != nil || next != goldenFeedInside {
		t.Fatalf("inside seals to other bytes: %v %v", next, err)
	}
	changes, err := issuer.SealRecordFeedChanges(from)
	if err != nil || changes != goldenStreamChanges {
		t.Fatalf("the feed's changesCursor is not the listing's of its horizon: %v %v", changes, err)
	}
	after, err := issuer.OpenRecordFeed(goldenReadable, goldenFeedAfter, true)
	if at := after.At(); err != nil || at.RestaurantID != "r1" || at.Stream != "deliveries" || at.In != nil {
		t.Fatalf("after: %+v, %v", at, err)
	}
	regranted, err := issuer.OpenRecordFeed("another fingerprint", goldenFeedInside, true)
	if err != nil || !regranted.Fresh() || regranted.At() != (store.FeedAt{}) {
		t.Fatalf("grants changed: %+v, %v", regranted, err)
	}
	expired := goldenIssuer(goldenNow.Add(24 * time.Hour))
	if _, err := expired.OpenRecordFeed(goldenReadable, goldenFeedInside, true); err == nil {
		t.Fatal("a feed cursor past its stream's lifetime opened")
	}
}
