package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
	"github.com/foodsafe/foodsafe/internal/store/internal/pgrows"
)

// The hand-written scans of a delivery page (pgrows.DeliveryListFirstInto and
// pgrows.DeliveryListAfterInto) return the temperature records' stored text,
// and exactly what the functions sqlc generates for the statements return, every column set (a commentary and
// none, lists empty and not), and append to the slice they are given.
func TestDeliveryListIntoAgrees(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := st.Pool().Exec(ctx, `INSERT INTO restaurants (id) VALUES ('r1');
INSERT INTO deliveries (restaurant_id, id, occurred_at, is_compliant, supplier_id, supplier_name, temperature_records,
                        non_compliance_reasons, corrective_actions, commentary, image_count, content_sha256, received_sequence)
VALUES ('r1', 'd1', 1000, true, 's1', 'S', '[]', '{}', '{}', NULL, 0, '\x01', 1),
       ('r1', 'd2', 2000, false, 's2', 'T', '[{"product":"p","lotNumber":"l","unit":"C","value":1E+2},{"unit": "C", "value": -0.0, "product": "\u003c", "lotNumber": "l"}]',
        '{late,"warm <x>"}', '{returned}', 'note', 2, '\x02', 2),
       ('r1', 'd3', 2000, true, 's1', 'S', '[]', '{}', '{}', '', 1, '\x03', 3)`)
	require.NoError(t, err)
	q := db.New(st.Pool())
	// The column holds the text written (json since migration 00019), and
	// the scan reads it as stored: numbers, escapes and spacing included.
	got, _, err := pgrows.DeliveryListFirstInto(ctx, st.Pool(), db.DeliveryListFirstParams{RestaurantID: "r1", FromMs: 2000, ToMs: 2000, MaxRows: 10}, nil, 0)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, `[{"product":"p","lotNumber":"l","unit":"C","value":1E+2},{"unit": "C", "value": -0.0, "product": "\u003c", "lotNumber": "l"}]`,
		string(got[1].TemperatureRecords))
	held := db.Delivery{ID: "held"}
	for name, max := range map[string]int32{"all": 10, "cut by max rows": 2, "none": 0} {
		t.Run(name, func(t *testing.T) {
			first := db.DeliveryListFirstParams{RestaurantID: "r1", FromMs: 0, ToMs: 5000, MaxRows: max}
			rows, err := q.DeliveryListFirst(ctx, first)
			require.NoError(t, err)
			want := deliveriesOf(rows)
			got, _, err := pgrows.DeliveryListFirstInto(ctx, st.Pool(), first, make([]db.Delivery, 0, 1), 0)
			require.NoError(t, err)
			require.Equal(t, want, append([]db.Delivery{}, got...))
			got, _, err = pgrows.DeliveryListFirstInto(ctx, st.Pool(), first, []db.Delivery{held}, 0)
			require.NoError(t, err)
			require.Equal(t, append([]db.Delivery{held}, want...), got)

			after := db.DeliveryListAfterParams{RestaurantID: "r1", FromMs: 0, AfterOccurredAt: 2000, AfterID: "d3", MaxRows: max}
			afterRows, err := q.DeliveryListAfter(ctx, after)
			require.NoError(t, err)
			want = deliveriesOf(afterRows)
			got, _, err = pgrows.DeliveryListAfterInto(ctx, st.Pool(), after, nil, 0)
			require.NoError(t, err)
			require.Equal(t, want, append([]db.Delivery{}, got...))
		})
	}
}

// deliveriesOf is what the generated statements return, as the deliveries
// rows pgrows scans (every column but changed_xact, which neither reads).
func deliveriesOf[R db.DeliveryListFirstRow | db.DeliveryListAfterRow](rows []R) []db.Delivery {
	out := []db.Delivery{}
	for _, r := range rows {
		g := db.DeliveryListFirstRow(r)
		out = append(out, db.Delivery{RestaurantID: g.RestaurantID, ID: g.ID, OccurredAt: g.OccurredAt, IsCompliant: g.IsCompliant,
			SupplierID: g.SupplierID, SupplierName: g.SupplierName, TemperatureRecords: g.TemperatureRecords,
			NonComplianceReasons: g.NonComplianceReasons, CorrectiveActions: g.CorrectiveActions, Commentary: g.Commentary,
			ImageCount: g.ImageCount, ContentSha256: g.ContentSha256, ReceivedAt: g.ReceivedAt, ReceivedSequence: g.ReceivedSequence})
	}
	return out
}
