// This file is written by hand (sqlc generates the others): a walk page is
// the service's largest read, and the function sqlc generates for it
// allocates more than the page it returns.

package db

import "context"

// RecordWalkPageInto runs RecordWalkPage and appends its rows to items,
// returning the grown slice (on an error too, so the caller can reuse it).
//
// The generated RecordWalkPage grows a new slice from nothing by append,
// and each row it scans escapes to the heap before it is copied in: for a
// page of 100 rows, about 57 KB of garbage per request, over half of all a
// walk request allocated under make bench-http. Here the caller passes a
// slice it keeps between requests, each row is scanned in place, and one
// set of scan destinations serves every row. The statement, its parameters
// and its row type are sqlc's; TestRecordWalkPageIntoAgrees holds this scan
// to the generated one (a column added to the statement fails it).
func (q *Queries) RecordWalkPageInto(ctx context.Context, arg RecordWalkPageParams, items []RecordWalkPageRow) ([]RecordWalkPageRow, error) {
	rows, err := q.db.Query(ctx, recordWalkPage,
		arg.RestaurantID,
		arg.Collection,
		arg.Pinned,
		arg.AfterSequence,
		arg.MaxRows,
	)
	if err != nil {
		return items, err
	}
	defer rows.Close()
	dest := make([]any, 10)
	for rows.Next() {
		items = append(items, RecordWalkPageRow{})
		i := &items[len(items)-1]
		dest[0], dest[1], dest[2], dest[3], dest[4] = &i.Pinned, &i.RecordID, &i.Sequence, &i.MutationID, &i.Deleted
		dest[5], dest[6], dest[7], dest[8], dest[9] = &i.Data, &i.CapturedAt, &i.ReceivedAt, &i.SourceVersion, &i.PayloadVersion
		if err := rows.Scan(dest...); err != nil {
			return items, err
		}
	}
	return items, rows.Err()
}
