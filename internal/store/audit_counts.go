package store

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/foodsafe/foodsafe/internal/audit"
	"github.com/foodsafe/foodsafe/internal/store/internal/db"
)

// AuditCountsAdd adds a flush of requests audited by shape to
// audit_counts, in one statement: each shape's row is created, or its
// count raised.
func (s *Store) AuditCountsAdd(ctx context.Context, counts []audit.ShapeCount) error {
	var p db.AuditCountsAddParams
	for _, c := range counts {
		client := c.Client
		if !client.IsValid() {
			client = netip.PrefixFrom(netip.IPv6Unspecified(), 128)
		}
		p.Minutes = append(p.Minutes, c.Minute)
		p.Clients = append(p.Clients, client.String())
		p.Methods = append(p.Methods, c.Method)
		p.Routes = append(p.Routes, c.Route)
		p.Statuses = append(p.Statuses, int16(c.Status))
		p.Outcomes = append(p.Outcomes, c.Outcome)
		p.KeyPublicIds = append(p.KeyPublicIds, c.KeyPublicID)
		p.Requests = append(p.Requests, c.Requests)
	}
	err := s.q.AuditCountsAdd(ctx, p)
	if missingPartition(err) {
		// A day the partition job has not prepared yet: create the
		// flush's days, then add again (nothing was written).
		days := map[time.Time]bool{}
		for _, c := range counts {
			t := c.Minute.UTC()
			days[time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)] = true
		}
		for day := range days {
			if _, cerr := s.AuditPartitionCreate(ctx, day); cerr != nil {
				return cerr
			}
		}
		err = s.q.AuditCountsAdd(ctx, p)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")) {
		return fmt.Errorf("%w: %v", audit.ErrRejected, err)
	}
	return err
}

// AuditCountsRecent lists counted shapes newest minute first, for
// `foodsafe audit --counts`; keyPublicID, when not empty, keeps that key's.
func (s *Store) AuditCountsRecent(ctx context.Context, since time.Time, keyPublicID string, limit int32) ([]audit.ShapeCount, error) {
	rows, err := s.q.AuditCountsRecent(ctx, db.AuditCountsRecentParams{Since: since, KeyPublicID: nonEmpty(keyPublicID), MaxRows: limit})
	if err != nil {
		return nil, translate(err)
	}
	out := make([]audit.ShapeCount, len(rows))
	for i, r := range rows {
		out[i] = audit.ShapeCount{Shape: audit.Shape{Minute: r.Minute, Client: r.ClientIp, Method: r.Method, Route: r.Route,
			Status: int(r.Status), Outcome: r.Outcome, KeyPublicID: r.KeyPublicID}, Requests: r.Requests}
	}
	return out, nil
}
