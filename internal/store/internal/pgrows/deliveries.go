// Written by hand for the reason walk.go gives: a page of the delivery
// list is read on every request.

package pgrows

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// DeliveryListFirstInto runs DeliveryListFirst and appends its rows to
// items, returning the grown slice (on an error too, so the caller can
// reuse it). The generated DeliveryListFirst moves every row it scans to
// the heap and grows its slice from nothing, most of what a request
// allocated under make bench-http (docs/performance.md, "make
// bench-http", has the measured figures). TestDeliveryListIntoAgrees holds this scan to the
// generated one.
//
// maxBytes bounds the page by bytes (0: no bound): the rows after the one
// that reaches it are not scanned, and cut reports that there were some.
func DeliveryListFirstInto(ctx context.Context, conn db.DBTX, arg db.DeliveryListFirstParams, items []db.Delivery, maxBytes int64) (_ []db.Delivery, cut bool, _ error) {
	rows, err := conn.Query(ctx, db.DeliveryListFirst,
		arg.RestaurantID,
		arg.FromMs,
		arg.ToMs,
		arg.MaxRows,
	)
	if err != nil {
		return items, false, err
	}
	return scanDeliveries(rows, items, maxBytes)
}

// DeliveryListAfterInto is DeliveryListAfter as DeliveryListFirstInto is
// DeliveryListFirst.
func DeliveryListAfterInto(ctx context.Context, conn db.DBTX, arg db.DeliveryListAfterParams, items []db.Delivery, maxBytes int64) (_ []db.Delivery, cut bool, _ error) {
	rows, err := conn.Query(ctx, db.DeliveryListAfter,
		arg.RestaurantID,
		arg.FromMs,
		arg.AfterOccurredAt,
		arg.AfterID,
		arg.MaxRows,
	)
	if err != nil {
		return items, false, err
	}
	return scanDeliveries(rows, items, maxBytes)
}

// DeliveryChangesPageInto runs DeliveryChangesPage as DeliveryListFirstInto
// runs DeliveryListFirst, at most maxBytes of deliveries (0: no bound).
func DeliveryChangesPageInto(ctx context.Context, conn db.DBTX, arg db.DeliveryChangesPageParams, items []db.Delivery, maxBytes int64) (_ []db.Delivery, cut bool, _ error) {
	rows, err := conn.Query(ctx, db.DeliveryChangesPage, arg.RestaurantID, arg.AfterSequence, arg.MaxRows)
	if err != nil {
		return items, false, err
	}
	return scanDeliveries(rows, items, maxBytes)
}

// scanDeliveries scans each row in place at the end of items, with one set
// of scan destinations for every row, until the rows reach maxBytes (0:
// no bound); cut reports rows left out.
func scanDeliveries(rows pgx.Rows, items []db.Delivery, maxBytes int64) (_ []db.Delivery, cut bool, _ error) {
	defer rows.Close()
	dest := make([]any, 14)
	page := deliveryCut{budget: maxBytes}
	for rows.Next() {
		if !page.take(rows.RawValues()) {
			cut = true
			continue
		}
		items = append(items, db.Delivery{})
		i := &items[len(items)-1]
		dest[0], dest[1], dest[2], dest[3], dest[4] = &i.RestaurantID, &i.ID, &i.OccurredAt, &i.IsCompliant, &i.SupplierID
		dest[5], dest[6], dest[7], dest[8], dest[9] = &i.SupplierName, &i.TemperatureRecords, &i.NonComplianceReasons, &i.CorrectiveActions, &i.Commentary
		dest[10], dest[11], dest[12], dest[13] = &i.ImageCount, &i.ContentSha256, &i.ReceivedAt, &i.ReceivedSequence
		if err := rows.Scan(dest...); err != nil {
			return items, false, err
		}
	}
	return items, cut, rows.Err()
}
