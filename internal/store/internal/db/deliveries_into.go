// This file is written by hand (sqlc generates the others), for the reason
// walk.go gives: a page of the delivery list is read on every request.

package db

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// DeliveryListFirstInto runs DeliveryListFirst and appends its rows to
// items, returning the grown slice (on an error too, so the caller can
// reuse it). The generated DeliveryListFirst moves every row it scans to
// the heap and grows its slice from nothing: for a page of 50, about
// 45 KB of garbage per request under make bench-http, two thirds of all a
// request allocated. TestDeliveryListIntoAgrees holds this scan to the
// generated one.
func (q *Queries) DeliveryListFirstInto(ctx context.Context, arg DeliveryListFirstParams, items []Delivery) ([]Delivery, error) {
	rows, err := q.db.Query(ctx, deliveryListFirst,
		arg.RestaurantID,
		arg.FromMs,
		arg.ToMs,
		arg.MaxRows,
	)
	if err != nil {
		return items, err
	}
	return scanDeliveries(rows, items)
}

// DeliveryListAfterInto is DeliveryListAfter as DeliveryListFirstInto is
// DeliveryListFirst.
func (q *Queries) DeliveryListAfterInto(ctx context.Context, arg DeliveryListAfterParams, items []Delivery) ([]Delivery, error) {
	rows, err := q.db.Query(ctx, deliveryListAfter,
		arg.RestaurantID,
		arg.FromMs,
		arg.AfterOccurredAt,
		arg.AfterID,
		arg.MaxRows,
	)
	if err != nil {
		return items, err
	}
	return scanDeliveries(rows, items)
}

// scanDeliveries scans each row in place at the end of items, with one set
// of scan destinations for every row.
func scanDeliveries(rows pgx.Rows, items []Delivery) ([]Delivery, error) {
	defer rows.Close()
	dest := make([]any, 14)
	for rows.Next() {
		items = append(items, Delivery{})
		i := &items[len(items)-1]
		dest[0], dest[1], dest[2], dest[3], dest[4] = &i.RestaurantID, &i.ID, &i.OccurredAt, &i.IsCompliant, &i.SupplierID
		dest[5], dest[6], dest[7], dest[8], dest[9] = &i.SupplierName, &i.TemperatureRecords, &i.NonComplianceReasons, &i.CorrectiveActions, &i.Commentary
		dest[10], dest[11], dest[12], dest[13] = &i.ImageCount, &i.ContentSha256, &i.ReceivedAt, &i.ReceivedSequence
		if err := rows.Scan(dest...); err != nil {
			return items, err
		}
	}
	return items, rows.Err()
}
