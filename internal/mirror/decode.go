package mirror

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/foodsafe/foodsafe/internal/mirror/partnerapi"
	"github.com/foodsafe/foodsafe/internal/mirror/targets"
)

// fileCollections carry files (spec 4.4).
var fileCollections = []string{"cleaning-task-pictures", "traceability-labels", "drive-files"}

// digits is a sequence or a head: a digit string.
var digits = regexp.MustCompile(`^[0-9]{1,64}$`)

// position reads a sequence or a head (a digit string) as the number the
// target keeps: the API's positions are 64-bit (at most 19 digits), so an
// analyst's ORDER BY sequence needs no cast; a longer one is refused,
// saying so, rather than kept in a form that would not sort.
func position(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || !digits.MatchString(s) {
		return 0, fmt.Errorf("position %q is not a number of 64 bits (the positions the mirror keeps are)", s)
	}
	return n, nil
}

// recordOf checks an envelope and turns it into a stored record;
// withFiles says the collection carries files, so data.asset is read here
// (the rest of data is read when the page is applied, for the typed
// relations).
func recordOf(e partnerapi.Envelope, withFiles bool) (targets.Record, error) {
	if e.ID == "" || !digits.MatchString(e.Sequence) {
		return targets.Record{}, fmt.Errorf("record %q: malformed id or sequence %q", e.ID, e.Sequence)
	}
	seq, err := position(e.Sequence)
	if err != nil {
		return targets.Record{}, fmt.Errorf("record %q: %w", e.ID, err)
	}
	captured, err1 := strconv.ParseInt(e.CapturedAt, 10, 64)
	received, err2 := strconv.ParseInt(e.ReceivedAt, 10, 64)
	if err1 != nil || err2 != nil {
		return targets.Record{}, fmt.Errorf("record %q: malformed capturedAt or receivedAt", e.ID)
	}
	r := targets.Record{ID: e.ID, Sequence: seq, Deleted: e.Deleted, CapturedAt: captured, ReceivedAt: received,
		MutationID: e.MutationID, SourceVersion: e.SourceVersion, PayloadVersion: e.PayloadVersion}
	if !e.Deleted {
		if len(e.Data) == 0 || string(e.Data) == "null" {
			return targets.Record{}, fmt.Errorf("record %q: a live record without data", e.ID)
		}
		r.Data = e.Data
		if !withFiles {
			return r, nil
		}
		var a struct {
			Asset *struct {
				Status string `json:"status"`
				SHA256 string `json:"sha256"`
			} `json:"asset"`
		}
		if json.Unmarshal(e.Data, &a) == nil && a.Asset != nil && a.Asset.Status == "uploaded" && sha256Hex.MatchString(a.Asset.SHA256) {
			r.AssetSHA256 = a.Asset.SHA256
		}
	}
	return r, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// recordsOf checks a page's envelopes and turns them into stored records.
func recordsOf(page []partnerapi.Envelope, withFiles bool) ([]targets.Record, error) {
	recs := make([]targets.Record, 0, len(page))
	for _, e := range page {
		r, err := recordOf(e, withFiles)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// deliveriesOf checks a page's deliveries and keeps those that occurred
// since since (epoch ms: Options.DeliveriesSince).
func deliveriesOf(page []json.RawMessage, since int64) ([]targets.Delivery, error) {
	ds := make([]targets.Delivery, 0, len(page))
	for _, raw := range page {
		var d partnerapi.Delivery
		if err := json.Unmarshal(raw, &d); err != nil || d.ID == "" {
			return nil, fmt.Errorf("a delivery that is not the documented shape: %v", err)
		}
		at, err := strconv.ParseInt(d.OccurredAt, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("delivery %q: malformed occurredAt", d.ID)
		}
		if at < since {
			continue
		}
		ds = append(ds, targets.Delivery{ID: d.ID, OccurredAt: at, IsCompliant: d.IsCompliant, SupplierID: d.Supplier.ID,
			SupplierName: d.Supplier.Name, ImageCount: d.ImageCount, Data: raw})
	}
	return ds, nil
}
