package httpapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/foodsafe/foodsafe/internal/catalog"
	"github.com/foodsafe/foodsafe/internal/wire"
)

// renderText is the text content of a tool result: a short reading of the
// structured output for clients and models that only see text. Timestamps
// stay the epoch-millisecond strings of the structured output, followed by
// the UTC date in brackets.
func renderText(tool string, out any) string {
	var b strings.Builder
	switch v := out.(type) {
	case wire.RestaurantList:
		writeRestaurants(&b, v.Data)
	case List[wire.CollectionDescriptor]:
		fmt.Fprintf(&b, "%s this key may read here:", count(len(v.Data), "collection"))
		for _, c := range v.Data {
			fmt.Fprintf(&b, "\n- %s: %s", c.Collection, c.Description)
		}
	case wire.WalkPage:
		fmt.Fprintf(&b, "%s, by sequence:", count(len(v.Data), "record"))
		for _, e := range v.Data {
			b.WriteString("\n- ")
			writeEnvelope(&b, e)
		}
		writeNext(&b, tool, v.NextCursor)
		writeChanges(&b, tool, v.ChangesCursor)
	case wire.Envelope:
		writeEnvelope(&b, v)
	case wire.Page[wire.Delivery]:
		writeDeliveries(&b, v.Data, "newest first")
		writeNext(&b, tool, v.NextCursor)
	case wire.ChangesPage[wire.StreamChange]:
		fmt.Fprintf(&b, "%s changed:", count(len(v.Data), "stream"))
		for _, c := range v.Data {
			fmt.Fprintf(&b, "\n- %s %s: head %d", c.RestaurantID, c.Stream, int64(c.Head))
		}
		writeNext(&b, tool, v.NextCursor)
		writeChanges(&b, tool, v.ChangesCursor)
	case wire.ChangesPage[wire.Delivery]:
		writeDeliveries(&b, v.Data, "in the order received")
		writeNext(&b, tool, v.NextCursor)
		writeChanges(&b, tool, v.ChangesCursor)
	case wire.RecordFeedPage:
		writeFeed(&b, tool, v)
	case wire.Delivery:
		writeDelivery(&b, v)
	case List[wire.FileItem]:
		fmt.Fprintf(&b, "%s:", count(len(v.Data), "file"))
		for _, f := range v.Data {
			fmt.Fprintf(&b, "\n- %s: %s, %d bytes, uploaded %s; download %s (until %s)",
				f.ID, f.ContentType, f.ByteLength, stamp(f.UploadedAt), f.URL, stamp(f.URLExpiresAt))
		}
	case wire.CollectionSchema:
		fmt.Fprintf(&b, "%s: %s Read scope %s; carries files: %t. The data of its records follows this JSON Schema (draft 2020-12):\n%s",
			v.Collection, v.Description, v.ReadScope, v.CarriesFiles, v.DataSchema)
	default:
		// An output this function does not know yet: its JSON says it all.
		j, _ := json.Marshal(out)
		b.Write(j)
	}
	return b.String()
}

// writeFeed is a page of the records feed: its items, the streams it
// finished and how to go on.
func writeFeed(b *strings.Builder, tool string, v wire.RecordFeedPage) {
	fmt.Fprintf(b, "%s, stream after stream:", count(len(v.Data), "item"))
	for _, it := range v.Data {
		fmt.Fprintf(b, "\n- %s ", it.RestaurantID)
		if it.Record != nil {
			writeEnvelope(b, *it.Record)
		} else if it.Delivery != nil {
			b.WriteString("delivery ")
			writeDelivery(b, *it.Delivery)
		}
	}
	for _, s := range v.Streams {
		fmt.Fprintf(b, "\nStream %s %s complete at head %d; to get only what changes in it from now on, call %s later with cursor %q.",
			s.RestaurantID, s.Stream, int64(s.Head), streamTool(s.Stream), s.ChangesCursor)
	}
	if v.NextCursor != nil {
		// A nextCursor carries the feed's since, and the two are
		// refused together.
		fmt.Fprintf(b, "\nMore: call %s again with the same limit and cursor %q, without since.", tool, *v.NextCursor)
	} else {
		writeNext(b, tool, nil)
	}
	if v.ChangesCursor != nil {
		fmt.Fprintf(b, "\nFor what changed while and since the feed ran, call walk_all_records later with since %q (or list_changes with it as cursor; it never expires).", *v.ChangesCursor)
	}
}

// writeRestaurants lists restaurants with their scopes, one line per run
// of restaurants holding the same scopes: a key of 20,000 restaurants with
// the same scopes everywhere is one line of ids, not 20,000 copies of its
// 25 scopes (11 MB of text no model reads).
func writeRestaurants(b *strings.Builder, gs []wire.RestaurantGrant) {
	fmt.Fprintf(b, "%s this key reaches:", count(len(gs), "restaurant"))
	for i := 0; i < len(gs); {
		j := i + 1
		for j < len(gs) && slices.Equal(gs[j].Scopes, gs[i].Scopes) {
			j++
		}
		b.WriteString("\n- ")
		for k, g := range gs[i:j] {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(g.RestaurantID)
		}
		fmt.Fprintf(b, ": %s", strings.Join(gs[i].Scopes, ", "))
		i = j
	}
}

// writeDeliveries lists deliveries, one a line, under a count that says
// their order.
func writeDeliveries(b *strings.Builder, ds []wire.Delivery, order string) {
	fmt.Fprintf(b, "%s, %s:", count(len(ds), "delivery"), order)
	for _, d := range ds {
		b.WriteString("\n- ")
		writeDelivery(b, d)
	}
}

func writeEnvelope(b *strings.Builder, e wire.Envelope) {
	fmt.Fprintf(b, "%s/%s (sequence %s, captured %s)", e.Collection, e.ID, strconv.FormatInt(int64(e.Sequence), 10), stamp(e.CapturedAt))
	if e.Deleted {
		b.WriteString(": deleted (tombstone)")
		return
	}
	fmt.Fprintf(b, ": %s", e.Data)
}

func writeDelivery(b *strings.Builder, d wire.Delivery) {
	fmt.Fprintf(b, "%s at %s (received %s) from %s (%s): ", d.ID, stamp(d.OccurredAt), stamp(d.ReceivedAt), d.Supplier.Name, d.Supplier.ID)
	if d.IsCompliant {
		b.WriteString("compliant")
	} else {
		b.WriteString("NOT compliant")
	}
	if len(d.NonComplianceReasons) > 0 {
		fmt.Fprintf(b, "; reasons: %s", strings.Join(d.NonComplianceReasons, "; "))
	}
	if len(d.CorrectiveActions) > 0 {
		fmt.Fprintf(b, "; actions: %s", strings.Join(d.CorrectiveActions, "; "))
	}
	for _, t := range d.TemperatureRecords {
		fmt.Fprintf(b, "; %s (lot %s) %s %s", t.Product, t.LotNumber, t.Value, t.Unit)
	}
	if d.Commentary != nil {
		fmt.Fprintf(b, "; note: %s", *d.Commentary)
	}
	fmt.Fprintf(b, "; %s", count(int(d.ImageCount), "photograph"))
}

// streamTool is the tool that walks a stream of the feed from its
// changesCursor.
func streamTool(stream string) string {
	if stream == catalog.DeliveryStream {
		return "list_delivery_changes"
	}
	return "walk_records"
}

// writeNext says how to go on: the paging rule, in the text too.
func writeNext(b *strings.Builder, tool string, next *string) {
	if next == nil {
		b.WriteString("\nLast page (nextCursor is null).")
		return
	}
	fmt.Fprintf(b, "\nMore: call %s again with the same arguments and cursor %q.", tool, *next)
}

// writeChanges says how to learn later what changes from now on.
func writeChanges(b *strings.Builder, tool string, changes *string) {
	if changes != nil {
		fmt.Fprintf(b, "\nTo get only what changes from now on, call %s later with cursor %q (it never expires).", tool, *changes)
	}
}

// stamp is an epoch-millisecond timestamp as sent, with its UTC date.
func stamp(ms wire.Millis) string {
	return fmt.Sprintf("%d [%s]", int64(ms), time.UnixMilli(int64(ms)).UTC().Format("2006-01-02T15:04:05.000Z"))
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
