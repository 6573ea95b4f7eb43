package postgres

import (
	"context"
	"fmt"

	"github.com/spillway-gw/spillway/internal/ledger"
	"github.com/spillway-gw/spillway/internal/ledger/sqlstore"
)

// RequestRows lists stored request rows by request id, in byte order; see
// ledger.Auditor.
func (s *Store) RequestRows(ctx context.Context, after string, limit int) ([]ledger.Request, error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	out, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanRequest, `SELECT `+sqlstore.RequestColumns+`
		FROM requests WHERE request_id IN (
			SELECT DISTINCT request_id COLLATE "C" FROM requests WHERE request_id COLLATE "C" > $1
			ORDER BY 1 LIMIT $2)
		ORDER BY request_id COLLATE "C"`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: request rows: %w", err)
	}
	return out, nil
}

// AttemptRows lists attempt rows by (request id, seq); see ledger.Auditor.
func (s *Store) AttemptRows(ctx context.Context, after ledger.AttemptKey, limit int) ([]ledger.Attempt, error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	out, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanAttempt, `SELECT `+sqlstore.AttemptColumns+`
		FROM attempts WHERE request_id COLLATE "C" > $1 OR (request_id = $1 AND seq > $2)
		ORDER BY request_id COLLATE "C", seq LIMIT $3`, after.RequestID, after.Seq, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: attempt rows: %w", err)
	}
	return out, nil
}

// ReservationStates counts the reservations by state; see ledger.Auditor.
func (s *Store) ReservationStates(ctx context.Context) (ledger.ReservationStates, error) {
	var st ledger.ReservationStates
	if err := s.pool.QueryRow(ctx, `SELECT
		COUNT(*) FILTER (WHERE settled_at IS NULL AND released_at IS NULL),
		COUNT(*) FILTER (WHERE released_at IS NOT NULL),
		COUNT(*) FILTER (WHERE settled_at IS NOT NULL) FROM reservations`).Scan(&st.Open, &st.Released, &st.Settled); err != nil {
		return st, fmt.Errorf("ledger/postgres: reservation states: %w", err)
	}
	if st.Open == 0 {
		return st, nil
	}
	ids, err := sqlstore.List(ctx, querier{s.pool}, sqlstore.ScanString, `SELECT request_id FROM reservations
		WHERE settled_at IS NULL AND released_at IS NULL ORDER BY created_at, request_id COLLATE "C" LIMIT $1`, ledger.MaxOpenIDs)
	if err != nil {
		return st, fmt.Errorf("ledger/postgres: reservation states: %w", err)
	}
	st.OpenIDs = ids
	return st, nil
}
