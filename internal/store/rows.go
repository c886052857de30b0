package store

import "github.com/foodsafe/foodsafe/internal/store/internal/db"

// The statements that read a record's or a delivery's every column but
// changed_xact (which only GET /v1/records?since= reads, through
// StreamPositionsSeen) return rows of their own; these make the table's
// row of them, which the rest of the store works with.

// recordOfRow is r as a records row.
func recordOfRow(r db.RecordGetRow) db.Record {
	return db.Record{RestaurantID: r.RestaurantID, Collection: r.Collection, RecordID: r.RecordID, Sequence: r.Sequence,
		MutationID: r.MutationID, Deleted: r.Deleted, Data: r.Data, CapturedAt: r.CapturedAt, ReceivedAt: r.ReceivedAt,
		SourceVersion: r.SourceVersion, PayloadVersion: r.PayloadVersion}
}

// deliveryOfRow is r as a deliveries row (DeliveryInsertRow and
// DeliveryChangesPageRow convert to DeliveryGetRow: the same columns).
func deliveryOfRow(r db.DeliveryGetRow) db.Delivery {
	return db.Delivery{RestaurantID: r.RestaurantID, ID: r.ID, OccurredAt: r.OccurredAt, IsCompliant: r.IsCompliant,
		SupplierID: r.SupplierID, SupplierName: r.SupplierName, TemperatureRecords: r.TemperatureRecords,
		NonComplianceReasons: r.NonComplianceReasons, CorrectiveActions: r.CorrectiveActions, Commentary: r.Commentary,
		ImageCount: r.ImageCount, ContentSha256: r.ContentSha256, ReceivedAt: r.ReceivedAt, ReceivedSequence: r.ReceivedSequence}
}
