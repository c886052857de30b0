package cursor_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/store"
)

// Cursors sealed with goldenKey at goldenNow: the golden* ones signed
// only, as cursors were before encryption, the sealed* ones encrypted, as
// they are now. Clients keep changesCursors for months and delivery-changes
// and stream-changes cursors for as long as they poll: both must open for
// ever, and the same positions must still seal to the same sealed* bytes.
const (
	sealedChanges         = "Ahgb7r4lbz5vq8xwc3oYnwK8yEnw8zVFfJ-oAWgD_xD5NGBxaX7Zb9PyRDIkZNM1OLC04KTExQe-aXFA_QuygfxOseZsYA"
	sealedRecords         = "Aoca4MqRTs5Wc2kP2hMNQWZLpAZP4ZT5kWW_BbTrIYXjg-pfwjckvf5N9nGUfWaseLlZDmt6_Sbo9queRGW929AndvM8re1POpP9mNEo_ecGoWHal1SXAmUmqyNK2ngAI_TBQqxOdvxxvsNaKK3P"
	sealedDeliveries      = "Al4XRS5QMA1VrbXWAgzZj_HZ-Hn9s1adwMj7aOJpOd7IicgTnOjbiHcNE_8I6yW0tnsr3_cJZ1Ev7SeMyEQqkvOA0P7jIBhcZPEWbxaGkRofwgZWAkU"
	sealedDeliveryChanges = "AnUJ4OV-TLdNQyLH9djgmJtWD5qKmz7rcLlunThQLPe4SC0Otc9C5I4IM1AJpNx4xwJkuacZUayC2srzyj-VorbVUkJX8Q"
	sealedStreamChanges   = "Ao0fvq2nQnUHSue1GYekmfZHC9Q8GDh17fqJ2fXWDnt_Vytb22L9b-BGcXkLCBApF7t64shi1xy6TaR-I41eS_ZpcmmkVu1SVqPvdIgDr6aTZyTvR0BL84LrFuH_awJf1Yc24IkfWYBC_bJ8ibVUhXWl_DYrjHbCeY7F2Vf9xw"
	sealedStreamNext      = "AoRVIQDC0oc39guV30Cv592stew54SgS6G9SoNyk_7uutQMIQ4iyXI0I9niv8DvyetAxx260F_o9tYybYNsR3aeHh3SYtYyTXOiJeCtzixFu26Fn96-8T-VkPuix7T2ZP6vkjA8Wq9ESXKowp1PlYyJmaYhQkeI8staG6FuVZpR-U0uVR8JTX0dnuj2p"

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
	// snapshot (the feed came after encryption: it has no signed form).
	sealedFeedInside = "AmkSc63N3hHg3KVbHPvyVNkb7KD_jvQNME1TVPSvLEkZY6zJLqnKL32KWp-6szq4TqpyaEAZg1RCOTt0mhnoK7FqTT-HdZ4YA3IjzwqdZGwHXpBvssKvxlaiQr07BztAycdKvI2856BrkILSh8Zi_Er3R655uL4q-IX3RZqK_cLzW_E-cebTsKYGjn3Iu-F6gCL2wZYtRy_mevPeo9G1HieLZSpH8-vyMX83vzxT6PnOGAiHO8A_Yt3ljyco8KAhAqxBGkU"
	sealedFeedAfter  = "AoylxYaK0qwGWohnr1MaM3js8Yy_G950Og_07amNP0gD-k_gf6-aHciPLpSAR9nIcD7J_dRcOKzdIubh-OGblo8UGYKzHAaabbufoOR5ffYJWzRXq6w-tMpaYv-WQnJtFx1YiDbqPR9ZOFXxEXw4xkNcR498WngW7GT7rFOFAv9b2mGFp6cpVPoUJyPN_Wp1_wT1_ixNx7leqxB_OT-FlVVU5UNBczUcvwaJX3lVIpIzhqrV"
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
		for i, limit := range []int{50, 7} { // bound without the limit
			w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: limit}
			from, err := later.OpenWalk(w, []string{goldenChanges, sealedChanges}[i], true)
			if err != nil || !from.Changes || from.Since != 42 || from.After != nil {
				t.Fatalf("limit %d: %+v, %v", limit, from, err)
			}
			_, changes, err := later.SealWalk(w, from, nil, 42)
			if err != nil {
				t.Fatal(err)
			}
			same("changesCursor", *changes, sealedChanges)
		}
	})
	t.Run("delivery list", func(t *testing.T) {
		d := cursor.Deliveries{Restaurant: "r1", From: 0, To: 1000}
		var pos *store.DeliveryPos
		for _, tok := range []string{goldenDeliveries, sealedDeliveries} {
			var err error
			pos, err = later.OpenDeliveries(d, tok, true)
			if err != nil || pos == nil || *pos != (store.DeliveryPos{OccurredAt: 900, ID: "d1"}) {
				t.Fatalf("%+v, %v", pos, err)
			}
		}
		next, err := later.SealDeliveries(d, *pos)
		if err != nil {
			t.Fatal(err)
		}
		same("delivery cursor", next, sealedDeliveries)
	})
	t.Run("delivery changes", func(t *testing.T) {
		for _, tok := range []string{goldenDeliveryChanges, sealedDeliveryChanges} {
			after, err := later.OpenDeliveryChanges("r1", tok, true)
			if err != nil || after != 9 {
				t.Fatalf("%d, %v", after, err)
			}
		}
		cur, err := later.SealDeliveryChanges("r1", 9)
		if err != nil {
			t.Fatal(err)
		}
		same("delivery changes cursor", cur, sealedDeliveryChanges)
	})
	t.Run("key-wide changes", func(t *testing.T) {
		for _, tok := range []string{goldenStreamChanges, sealedStreamChanges} {
			from, err := later.OpenStreamChanges(goldenReadable, tok, true)
			if err != nil {
				t.Fatal(err)
			}
			since := from.Since()
			if r, s := from.After(); since.Xmin != 100 || since.Xmax != 105 || !slices.Equal(since.Xip, []int64{101, 103}) || r != "" || s != "" {
				t.Fatalf("changesCursor: since %+v, after %q %q", since, r, s)
			}
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
		same("changesCursor", cur, sealedStreamChanges)

		for _, tok := range []string{goldenStreamNext, sealedStreamNext} {
			from, err := later.OpenStreamChanges(goldenReadable, tok, true)
			if err != nil {
				t.Fatal(err)
			}
			if r, s := from.After(); from.Since().Xmax != 0 || r != "r1" || s != "areas" {
				t.Fatalf("nextCursor: since %+v, after %q %q", from.Since(), r, s)
			}
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
		same("nextCursor", cur, sealedStreamNext)
	})
}

// A walk's nextCursors, golden too, open within the walk's lifetime (and
// one issued before cursors carried the walk's end, within its own).
func TestGoldenWalkCursors(t *testing.T) {
	issuer := goldenIssuer(goldenNow.Add(time.Hour))
	w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 50}
	end := time.Unix(1_800_086_400, 0)
	for name, tok := range map[string]string{"with the walk's end": goldenRecords, "without": goldenRecordsNoUntil, "encrypted": sealedRecords} {
		from, err := issuer.OpenWalk(w, tok, true)
		if err != nil || from.Changes || from.After == nil || *from.After != (store.WalkPos{Pinned: 42, After: 7}) || !from.Until.Equal(end) {
			t.Fatalf("%s: %+v, %v", name, from, err)
		}
	}
	next, _, err := issuer.SealWalk(w, cursor.WalkFrom{Until: end}, &store.WalkPos{Pinned: 42, After: 7}, 42)
	if err != nil || *next != sealedRecords {
		t.Fatalf("nextCursor seals to other bytes: %v %v", next, err)
	}
}

// A cursor tells its holder nothing: the position and binding of a sealed
// cursor are not in its bytes (a stream-changes cursor would otherwise
// show the cluster's transaction ids), while one sealed before encryption
// shows them in clear.
func TestCursorsAreOpaque(t *testing.T) {
	issuer := goldenIssuer(goldenNow)
	first, err := issuer.OpenStreamChanges(goldenReadable, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := issuer.PinStreamChanges(&first, store.Snapshot{Xmin: 987654321, Xmax: 987654399, Xip: []int64{987654330}}); err != nil {
		t.Fatal(err)
	}
	tok, err := issuer.SealStreamChanges(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{"987654", "stream-changes", goldenReadable, `"v"`} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Fatalf("sealed cursor shows %q: %q", clear, raw)
		}
	}
	old, _ := base64.RawURLEncoding.DecodeString(goldenStreamChanges)
	if !bytes.Contains(old, []byte(`"n":100`)) {
		t.Fatalf("the signed golden cursor was expected in clear: %q", old)
	}
}

// Any change to any byte of a cursor, encrypted or signed, is refused as
// malformed: the synthetic IV authenticates every byte it encrypts.
func TestEveryByteIsAuthenticated(t *testing.T) {
	issuer := goldenIssuer(goldenNow)
	w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 7}
	for _, tok := range []string{sealedChanges, goldenChanges} {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			for _, bit := range []byte{0x01, 0x80} {
				bad := bytes.Clone(raw)
				bad[i] ^= bit
				if from, err := issuer.OpenWalk(w, base64.RawURLEncoding.EncodeToString(bad), true); err == nil {
					t.Fatalf("byte %d of %.8s... flipped by %#x opened to %+v", i, tok, bit, from)
				}
			}
		}
		if _, err := issuer.OpenWalk(w, tok, true); err != nil {
			t.Fatalf("unaltered %.8s...: %v", tok, err)
		}
	}
}

// A walk's position must be one a walk could have issued: a walk never
// stands past the position it is pinned at, which Valid promises and the
// SQL relies on. A cursor authentic but claiming otherwise (a leaked key)
// is refused as malformed before it reaches the store.
func TestWalkPositionPastItsPinIsRefused(t *testing.T) {
	codec := cursor.New([]byte(goldenKey), func() time.Time { return goldenNow })
	issuer := cursor.NewIssuer(codec, 24*time.Hour, nil)
	w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 50}
	until := goldenNow.Add(time.Hour)
	for pos, ok := range map[string]bool{
		`{"p":42,"a":42}`: true, `{"p":42,"a":0}`: true, `{"p":0,"a":0}`: true,
		`{"p":42,"a":43}`: false, `{"p":0,"a":1}`: false, `{"p":-1,"a":0}`: false, `{"p":5,"a":-1}`: false,
	} {
		tok, err := codec.SealUntil(string(cursor.KindRecords), []string{"r1", "areas", "50"}, json.RawMessage(pos), until)
		if err != nil {
			t.Fatal(err)
		}
		from, err := issuer.OpenWalk(w, tok, true)
		if ok != (err == nil) {
			t.Fatalf("%s: %+v, %v", pos, from, err)
		}
	}
}

// The records feed's cursors, golden too: they open within their
// stream's lifetime to the positions sealed, those positions seal to the
// same bytes, and the feed's changesCursor is the GET /v1/changes cursor
// of its horizon. Past the lifetime they are refused as expired; for a
// key whose grants changed the feed starts over.
func TestGoldenRecordFeedCursors(t *testing.T) {
	issuer := goldenIssuer(goldenNow.Add(time.Hour))
	from, err := issuer.OpenRecordFeed(goldenReadable, sealedFeedInside, true)
	if err != nil || from.Fresh() {
		t.Fatalf("%+v, %v", from, err)
	}
	if at := from.At(); at.RestaurantID != "r1" || at.Stream != "areas" || at.In == nil || *at.In != (store.WalkPos{Pinned: 42, After: 7}) {
		t.Fatalf("inside: %+v", at)
	}
	// Still inside the same stream: the same lifetime, the same bytes.
	next, err := issuer.SealRecordFeed(from, store.FeedAt{RestaurantID: "r1", Stream: "areas", In: &store.WalkPos{Pinned: 42, After: 7}})
	if err != nil || next != sealedFeedInside {
		t.Fatalf("inside seals to other bytes: %v %v", next, err)
	}
	changes, err := issuer.SealRecordFeedChanges(from)
	if err != nil || changes != sealedStreamChanges {
		t.Fatalf("the feed's changesCursor is not the listing's of its horizon: %v %v", changes, err)
	}
	after, err := issuer.OpenRecordFeed(goldenReadable, sealedFeedAfter, true)
	if at := after.At(); err != nil || at.RestaurantID != "r1" || at.Stream != "deliveries" || at.In != nil {
		t.Fatalf("after: %+v, %v", at, err)
	}
	regranted, err := issuer.OpenRecordFeed("another fingerprint", sealedFeedInside, true)
	if err != nil || !regranted.Fresh() || regranted.At() != (store.FeedAt{}) {
		t.Fatalf("grants changed: %+v, %v", regranted, err)
	}
	expired := goldenIssuer(goldenNow.Add(24 * time.Hour))
	if _, err := expired.OpenRecordFeed(goldenReadable, sealedFeedInside, true); err == nil {
		t.Fatal("a feed cursor past its stream's lifetime opened")
	}
}
