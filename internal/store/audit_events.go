package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// AuditInsert writes a batch of audit events with COPY.
func (s *Store) AuditInsert(ctx context.Context, events []audit.Event) error {
	rows := make([]db.AuditInsertParams, len(events))
	for i, e := range events {
		rows[i] = db.AuditInsertParams{
			OccurredAt:   e.At,
			KeyPublicID:  nonEmpty(e.KeyPublicID),
			RestaurantID: nonEmpty(e.RestaurantID),
			Method:       e.Method,
			Route:        e.Route,
			Status:       int16(e.Status),
			RequestID:    e.RequestID,
			Outcome:      nonEmpty(e.Outcome),
		}
		if e.ClientIP.IsValid() {
			ip := e.ClientIP
			rows[i].ClientIp = &ip
		}
	}
	_, err := s.q.AuditInsert(ctx, rows)
	if missingPartition(err) {
		// A day the partition job has not prepared (it runs ahead, but
		// may not have run yet): create the batch's days, then write the
		// batch again. COPY wrote nothing the first time.
		for _, day := range batchDays(events) {
			if _, cerr := s.AuditPartitionCreate(ctx, day); cerr != nil {
				return cerr
			}
		}
		_, err = s.q.AuditInsert(ctx, rows)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")) {
		// Data or integrity exception: the same batch would fail forever.
		return fmt.Errorf("%w: %v", audit.ErrRejected, err)
	}
	return err
}

// missingPartition: a row fell outside every audit partition.
func missingPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514" && strings.HasPrefix(pe.Message, "no partition of relation")
}

// batchDays lists the distinct UTC days of a batch's events.
func batchDays(events []audit.Event) []time.Time {
	var days []time.Time
	seen := map[time.Time]bool{}
	for _, e := range events {
		t := e.At.UTC()
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		if !seen[d] {
			seen[d] = true
			days = append(days, d)
		}
	}
	return days
}

// AuditFilter selects events for `foodsafe audit`.
type AuditFilter struct {
	KeyPublicID  string
	RestaurantID string
	Since        time.Time
	Limit        int32
}

// AuditRecent lists events newest first, choosing the query whose index
// fits the filter.
func (s *Store) AuditRecent(ctx context.Context, f AuditFilter) ([]audit.Event, error) {
	var rows []db.AuditEvent
	var err error
	switch {
	case f.KeyPublicID != "":
		rows, err = s.q.AuditRecentByKey(ctx, db.AuditRecentByKeyParams{
			KeyPublicID: &f.KeyPublicID, Since: f.Since, RestaurantID: nonEmpty(f.RestaurantID), MaxRows: f.Limit})
	case f.RestaurantID != "":
		rows, err = s.q.AuditRecentByRestaurant(ctx, db.AuditRecentByRestaurantParams{
			RestaurantID: &f.RestaurantID, Since: f.Since, MaxRows: f.Limit})
	default:
		rows, err = s.q.AuditRecent(ctx, db.AuditRecentParams{Since: f.Since, MaxRows: f.Limit})
	}
	if err != nil {
		return nil, translate(err)
	}
	out := make([]audit.Event, len(rows))
	for i, r := range rows {
		out[i] = audit.Event{At: r.OccurredAt, KeyPublicID: deref(r.KeyPublicID), RestaurantID: deref(r.RestaurantID),
			Method: r.Method, Route: r.Route, Status: int(r.Status), RequestID: r.RequestID, Outcome: deref(r.Outcome)}
		if r.ClientIp != nil {
			out[i].ClientIP = *r.ClientIp
		}
	}
	return out, nil
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
