package postgres

import (
	"context"
	"fmt"

	"github.com/spillway-gw/spillway/internal/ledger"
)

// RequestRows lists stored request rows by request id, in byte order; see
// ledger.Auditor.
func (s *Store) RequestRows(ctx context.Context, after string, limit int) ([]ledger.Request, error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT request_id, org, team, key_id, public_model, exact_model, deployment,
		route_depth, attempts, status, failure_class, input_tokens, output_tokens, cached_tokens, cost_micro_usd,
		cost_status, reserved_micro_usd, streamed, first_token_ms, latency_ms, started_at, finished_at, exercise
		FROM requests WHERE request_id IN (
			SELECT DISTINCT request_id COLLATE "C" FROM requests WHERE request_id COLLATE "C" > $1
			ORDER BY 1 LIMIT $2)
		ORDER BY request_id COLLATE "C"`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: request rows: %w", err)
	}
	defer rows.Close()
	var out []ledger.Request
	for rows.Next() {
		var r ledger.Request
		var started, finished int64
		if err := rows.Scan(&r.RequestID, &r.Org, &r.Team, &r.KeyID, &r.PublicModel, &r.ExactModel, &r.Deployment,
			&r.RouteDepth, &r.Attempts, &r.Status, &r.FailureClass, &r.InputTokens, &r.OutputTokens, &r.CachedTokens,
			&r.CostMicroUSD, &r.CostStatus, &r.ReservedMicroUSD, &r.Streamed, &r.FirstTokenMS, &r.LatencyMS,
			&started, &finished, &r.Exercise); err != nil {
			return nil, fmt.Errorf("ledger/postgres: request rows: %w", err)
		}
		r.StartedAt, r.FinishedAt = fromMicros(started), fromMicros(finished)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger/postgres: request rows: %w", err)
	}
	return out, nil
}

// AttemptRows lists attempt rows by (request id, seq); see ledger.Auditor.
func (s *Store) AttemptRows(ctx context.Context, after ledger.AttemptKey, limit int) ([]ledger.Attempt, error) {
	if err := ledger.CheckAuditPage(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT request_id, seq, deployment, failure_class, http_status, input_tokens,
		output_tokens, cost_micro_usd, first_byte_ms, duration_ms, started_at
		FROM attempts WHERE request_id COLLATE "C" > $1 OR (request_id = $1 AND seq > $2)
		ORDER BY request_id COLLATE "C", seq LIMIT $3`, after.RequestID, after.Seq, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: attempt rows: %w", err)
	}
	defer rows.Close()
	var out []ledger.Attempt
	for rows.Next() {
		var a ledger.Attempt
		var started int64
		if err := rows.Scan(&a.RequestID, &a.Seq, &a.Deployment, &a.FailureClass, &a.HTTPStatus, &a.InputTokens,
			&a.OutputTokens, &a.CostMicroUSD, &a.FirstByteMS, &a.DurationMS, &started); err != nil {
			return nil, fmt.Errorf("ledger/postgres: attempt rows: %w", err)
		}
		a.StartedAt = fromMicros(started)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
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
	rows, err := s.pool.Query(ctx, `SELECT request_id FROM reservations WHERE settled_at IS NULL AND released_at IS NULL
		ORDER BY created_at, request_id COLLATE "C" LIMIT $1`, ledger.MaxOpenIDs)
	if err != nil {
		return st, fmt.Errorf("ledger/postgres: reservation states: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return st, fmt.Errorf("ledger/postgres: reservation states: %w", err)
		}
		st.OpenIDs = append(st.OpenIDs, id)
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("ledger/postgres: reservation states: %w", err)
	}
	return st, nil
}
