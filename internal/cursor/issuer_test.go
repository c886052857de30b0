package cursor_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/cursor"
	"github.com/foodsafe/foodsafe/internal/store"
)

// Every refusal is a 400 on the parameter cursor whose detail says what
// went wrong and what to do, in the words of the list the cursor was sent
// to; a cursor of another list is refused as one.
func TestRefusals(t *testing.T) {
	now := goldenNow
	issuer := cursor.NewIssuer(cursor.New([]byte(goldenKey), func() time.Time { return now }), 24*time.Hour, nil)
	w := cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 50}
	d := cursor.Deliveries{Restaurant: "r1", From: 0, To: 1000}
	nextCursor, _, err := issuer.SealWalk(w, cursor.WalkFrom{Until: now.Add(time.Hour)}, &store.WalkPos{Pinned: 1, After: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	next := *nextCursor
	walk := func(w cursor.Walk, tok string) func() error {
		return func() error { _, err := issuer.OpenWalk(w, tok, true); return err }
	}
	deliveries := func(d cursor.Deliveries, tok string) func() error {
		return func() error { _, err := issuer.OpenDeliveries(d, tok, true); return err }
	}
	deliveryChanges := func(restaurant, tok string) func() error {
		return func() error { _, err := issuer.OpenDeliveryChanges(restaurant, tok, true); return err }
	}
	streams := func(tok string) func() error {
		return func() error { _, err := issuer.OpenStreamChanges(goldenReadable, tok, true); return err }
	}
	const (
		walkRestart   = "start a new walk (a full walk, without a cursor), or walk again from the changesCursor of your last complete walk"
		walkMalformed = "is not a cursor issued by this service for this list (garbage, truncated or altered); pass nextCursor or changesCursor unchanged, or " + walkRestart
	)
	for _, c := range []struct {
		name   string
		refuse func() error
		detail string
	}{
		{"walk: garbage", walk(w, "not-a-cursor"), walkMalformed},
		{"walk: empty", walk(w, ""), walkMalformed},
		{"walk: tampered", walk(w, next[:len(next)-2]+"AA"), walkMalformed},
		{"walk: other limit", walk(cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 51}, next),
			"was issued for another restaurant, collection or limit (or by another list); keep them identical for a whole walk, or " + walkRestart},
		{"walk: a delivery cursor", walk(w, goldenDeliveries),
			"was issued for another restaurant, collection or limit (or by another list); keep them identical for a whole walk, or " + walkRestart},
		{"walk: a changesCursor of another collection", walk(cursor.Walk{Restaurant: "r1", Collection: "products", Limit: 50}, goldenChanges),
			"was issued for another restaurant or collection (or by another list); keep one changesCursor per restaurant and collection, or start a new walk (a full walk, without a cursor)"},
		{"walk: past the walk's end", func() error { now = now.Add(2 * time.Hour); defer func() { now = goldenNow }(); return walk(w, next)() },
			"has expired; " + walkRestart},
		{"walk: ahead", func() error { return issuer.Ahead(cursor.KindChanges) },
			"names a position this collection has not reached (its data was restored or reset since); start a new walk (a full walk, without a cursor) and rebuild your copy from it"},
		{"deliveries: garbage", deliveries(d, "not-a-cursor"),
			"is not a cursor issued by this service for this list (garbage, truncated or altered); pass nextCursor unchanged, or start a new walk without a cursor"},
		{"deliveries: other range", deliveries(cursor.Deliveries{Restaurant: "r1", From: 0, To: 999}, goldenDeliveries),
			"was issued for another restaurant, from or to (or by another list); keep them identical for a whole walk, or start a new walk without a cursor"},
		{"delivery changes: other restaurant", deliveryChanges("r2", goldenDeliveryChanges),
			"was issued for another restaurant (or by another list); keep one cursor per restaurant, or start again without a cursor"},
		{"delivery changes: a walk cursor", deliveryChanges("r1", next),
			"was issued for another restaurant (or by another list); keep one cursor per restaurant, or start again without a cursor"},
		{"delivery changes: ahead", func() error { return issuer.Ahead(cursor.KindDeliveryChanges) },
			"names a position this restaurant's deliveries have not reached (its data was restored or reset since); start again without a cursor and deduplicate on id"},
		{"changes: garbage", streams("not-a-cursor"),
			"is not a cursor issued by this service for this list (garbage, truncated or altered); pass nextCursor or changesCursor unchanged, or list again without a cursor"},
		{"changes: a cursor of another list", streams(goldenDeliveryChanges),
			"is not a cursor issued by this service for this list (garbage, truncated or altered); pass nextCursor or changesCursor unchanged, or list again without a cursor"},
		{"changes: ahead", func() error {
			from, err := issuer.OpenStreamChanges(goldenReadable, goldenStreamChanges, true)
			if err != nil {
				return err
			}
			return issuer.PinStreamChanges(&from, store.Snapshot{Xmin: 100, Xmax: 104})
		}, "names a position this service has not reached (its data was restored or reset since); list again without a cursor and compare each stream's head with your copy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, ok := apperr.As(c.refuse())
			if !ok || e.Code != apperr.Invalid || len(e.Errors) != 1 || e.Errors[0].Parameter != "cursor" {
				t.Fatalf("not a 400 on cursor: %#v", e)
			}
			if e.Errors[0].Detail != c.detail {
				t.Fatalf("detail\n got %s\nwant %s", e.Errors[0].Detail, c.detail)
			}
		})
	}
}

// Signed is not trusted: a position this service could not have issued is
// refused like garbage, whatever the list.
func TestInvalidPositions(t *testing.T) {
	codec := cursor.New([]byte(goldenKey), func() time.Time { return goldenNow })
	issuer := cursor.NewIssuer(codec, time.Hour, nil)
	seal := func(kind cursor.Kind, bind []string, pos string) string {
		tok, err := codec.Seal(string(kind), bind, json.RawMessage(pos), 0)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for name, open := range map[string]func() error{
		"changesCursor": func() error {
			_, err := issuer.OpenWalk(cursor.Walk{Restaurant: "r1", Collection: "areas", Limit: 5}, seal(cursor.KindChanges, []string{"r1", "areas"}, `{"s":-1}`), true)
			return err
		},
		"delivery changes": func() error {
			_, err := issuer.OpenDeliveryChanges("r1", seal(cursor.KindDeliveryChanges, []string{"r1"}, `{"a":-1}`), true)
			return err
		},
		"key-wide changes: xip outside the snapshot": func() error {
			_, err := issuer.OpenStreamChanges("f", seal(cursor.KindStreamChanges, nil, `{"s":{"n":5,"x":7,"i":[9]},"f":"f"}`), true)
			return err
		},
		"key-wide changes: not a stream": func() error {
			_, err := issuer.OpenStreamChanges("f", seal(cursor.KindStreamChanges, nil, `{"s":{},"h":{},"r":"r1","t":"nope","f":"f"}`), true)
			return err
		},
		"records feed: not a stream": func() error {
			_, err := issuer.OpenRecordFeed("f", seal(cursor.KindRecordFeed, nil, `{"f":"f","h":{},"r":"r1","t":"nope","u":1}`), true)
			return err
		},
		"records feed: inside no stream": func() error {
			_, err := issuer.OpenRecordFeed("f", seal(cursor.KindRecordFeed, nil, `{"f":"f","h":{},"i":true,"a":3,"u":1}`), true)
			return err
		},
		"records feed: a snapshot the database could not take": func() error {
			_, err := issuer.OpenRecordFeed("f", seal(cursor.KindRecordFeed, nil, `{"f":"f","h":{"n":5,"x":3},"u":1}`), true)
			return err
		},
		"records feed: a negative position": func() error {
			_, err := issuer.OpenRecordFeed("f", seal(cursor.KindRecordFeed, nil, `{"f":"f","h":{},"r":"r1","t":"areas","i":true,"p":-1,"u":1}`), true)
			return err
		},
	} {
		e, ok := apperr.As(open())
		if !ok || e.Code != apperr.Invalid || len(e.Errors) != 1 {
			t.Fatalf("%s: %#v", name, e)
		}
		if d := e.Errors[0].Detail; len(d) < 20 || d[:20] != "is not a cursor issu" {
			t.Fatalf("%s: %s", name, d)
		}
	}
}
